import Foundation
import Synchronization

/// A capture output that writes one CSV row per video frame it sees — source, frame index,
/// capture time, presentation time — for people who must align cameras afterwards.
///
/// Columns: `source` (the session's source number), `name`, `frame` (the source's own frame
/// index: gaps are frames the source dropped), `capture_time` (seconds on the session clock
/// when the source captured the frame: a camera driver's timestamp, a network frame's
/// arrival), `presentation_time` (seconds on the recording's timeline). Rows are written on
/// the log's own thread; if it falls behind, rows are dropped and a final comment line
/// counts them.
public final class FrameLog: CaptureOutput {
    private struct Row: Sendable {
        let source: SourceID
        let frame: Int64
        let capture: MediaTime
        let presentation: MediaTime
    }
    private struct State {
        var queue: BoundedQueue<Row>?
        var worker: WorkerThread?
        var origin = MediaTime.zero
        var started = false
    }
    /// The CSV file.
    public let url: URL
    private let overwrite: Bool
    private let state = Mutex(State())
    private let dropped = Atomic<Int>(0)
    private let written = Atomic<Int>(0)

    /// Creates a log that will write `url` when its session starts; an existing file is an
    /// error unless `overwrite`.
    public init(url: URL, overwrite: Bool = false) {
        self.url = url
        self.overwrite = overwrite
    }

    /// Rows written so far.
    public var rowsWritten: Int { written.load(ordering: .relaxed) }

    public func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (overwrite ? O_TRUNC : O_EXCL)
        let fd = open(url.path, flags, 0o644)
        guard fd >= 0 else {
            let code = errno
            if code == EEXIST {
                throw ReelError(.fileExists, "\(url.path) already exists", hint: "choose another name or pass --overwrite", errno: code)
            }
            throw ReelError(code == ENOSPC ? .insufficientStorage : code == EACCES ? .permissionDenied : .ioFailure,
                            "cannot create the frame log \(url.path): \(String(cString: strerror(code)))", errno: code)
        }
        let names = Dictionary(uniqueKeysWithValues: sources.map { ($0.id, Self.quoted($0.name)) })
        let queue = BoundedQueue<Row>(capacity: 4096, policy: clock.isRealTime ? .dropNewest : .block)
        dropped.store(0, ordering: .relaxed)
        written.store(0, ordering: .relaxed)
        try state.withLock { s in
            guard !s.started else {
                close(fd)
                throw ReelError(.alreadyRunning, "the frame log is already in use")
            }
            s.started = true
            s.origin = origin
            s.queue = queue
            s.worker = WorkerThread(name: "reel.framelog") { [self] _ in write(fd: fd, queue: queue, names: names) }
        }
    }

    public func consume(_ sample: SourcedSample) {
        guard case .video(let frame) = sample.sample, let (queue, origin) = state.withLock({ s in s.queue.map { ($0, s.origin) } }) else { return }
        let row = Row(source: sample.source, frame: frame.sequenceNumber,
                      capture: frame.captureTime ?? origin + frame.presentationTime, presentation: frame.presentationTime)
        if !queue.push(row) { dropped.add(1, ordering: .relaxed) }
    }

    public func sourceEvent(_ event: SourceEvent, from source: SourceID) {}

    public func finish() async {
        let (queue, worker) = state.withLock { s in (s.queue, s.worker) }
        queue?.close()
        if let worker { await CaptureSession.offload { worker.join() } }
        state.withLock { s in s.queue = nil; s.worker = nil }
    }

    private func write(fd: Int32, queue: BoundedQueue<Row>, names: [SourceID: String]) {
        var buffer = "source,name,frame,capture_time,presentation_time\n"
        var failed = false
        func flush() {
            guard !failed else { return }
            let bytes = Array(buffer.utf8)
            var done = 0
            while done < bytes.count {
                let n = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + done, bytes.count - done) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { failed = true; break }
                done += n
            }
            buffer.removeAll(keepingCapacity: true)
        }
        while let row = queue.pop() {
            buffer += "\(row.source.rawValue),\(names[row.source] ?? ""),\(row.frame),\(Self.seconds(row.capture)),\(Self.seconds(row.presentation))\n"
            written.add(1, ordering: .relaxed)
            if buffer.utf8.count > 1 << 16 { flush() }
        }
        let lost = dropped.load(ordering: .relaxed)
        if lost > 0 { buffer += "# \(lost) rows dropped: the log fell behind\n" }
        flush()
        close(fd)
    }

    /// Seconds with microsecond precision.
    private static func seconds(_ t: MediaTime) -> String {
        let us = t.convertedValue(to: 1_000_000, rounding: .nearest)
        let sign = us < 0 ? "-" : ""
        let a = abs(us)
        let fraction = String(a % 1_000_000)
        return "\(sign)\(a / 1_000_000).\(String(repeating: "0", count: 6 - fraction.count))\(fraction)"
    }

    /// A CSV field, quoted when it holds a comma, a quote or a line break.
    private static func quoted(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
