import Foundation
import ReelSystem
import Synchronization

/// A capture output that writes one CSV row per video frame it sees — source, frame index,
/// capture time, presentation time — for people who must align cameras afterwards.
///
/// Columns: `source` (the session's source number), `name`, `frame` (the source's own frame
/// index: gaps are frames the source dropped), `capture_time` (seconds on the session clock
/// when the source captured the frame: a camera driver's timestamp, a network frame's
/// arrival), `presentation_time` (seconds on the session's timeline). Rows are written on
/// the log's own thread; if it falls behind, rows are dropped and a final comment line
/// counts them. A log that cannot be written (a full disk) stops there and keeps the failure
/// in ``error``; the session and the recordings beside it go on.
///
/// Linked to a ``Recorder`` (`FrameLog(url:recorder:)`), the log speaks of the recorder's file
/// instead: once the recording has ended its rows are rewritten with `presentation_time` the
/// frame's time in the file and a last column `recorded`, `yes` for the frames the file holds
/// and `no` (with no presentation time) for those it does not (before the recording began,
/// paused, dropped by the recorder, after it ended); a number the source skipped (a frame it
/// dropped, which no output saw) gets a row too, without times, `recorded` `dropped`. For a source the recorder does not write itself (a camera
/// composed by a ``Compositor``) the time is that of the first frame of the file that can show
/// it. While recording, the file holds the raw rows, with the session's times in a
/// `session_time` column.
public final class FrameLog: CaptureOutput {
    private struct Row: Sendable {
        let source: SourceID
        let frame: Int64
        let capture: MediaTime
        let presentation: MediaTime
    }
    private struct State {
        var worker: OutputWorker<Row>?
        var origin = MediaTime.zero
        var started = false
    }
    /// The CSV file.
    public let url: URL
    private let overwrite: Bool
    /// The recorder whose file the rows are rewritten for, if linked.
    private let recorder: Recorder?
    private let state = Mutex(State())
    private let dropped = Atomic<Int>(0)
    private let written = Atomic<Int>(0)
    private let failure = Mutex<ReelError?>(nil)

    /// Creates a log that will write `url` when its session starts; an existing file is an
    /// error unless `overwrite`. With a `recorder`, the rows say which frames its file holds
    /// and at what times (see above).
    public init(url: URL, overwrite: Bool = false, recorder: Recorder? = nil) {
        self.url = url
        self.overwrite = overwrite
        self.recorder = recorder
    }

    /// Rows written so far.
    public var rowsWritten: Int { written.load(ordering: .relaxed) }

    /// The first failure to write the log (a full disk, say), if any: the rows after it are
    /// lost, the recording it logs goes on. Complete once the session has stopped.
    public var error: ReelError? { failure.withLock { $0 } }

    /// Keeps `error` as the log's failure unless it has one already.
    private func report(_ error: ReelError) {
        failure.withLock { if $0 == nil { $0 = error } }
    }

    public func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {
        // A log to be replaced stays until the new one has a row: that is written under a name
        // of its own beside it, which takes the log's name with the first row.
        var info = stat()
        let exists = lstat(url.path, &info) == 0
        if exists && (info.st_mode & S_IFMT) != S_IFREG {
            // A device, a pipe, a folder, a link: never replaced, never opened (a pipe would wait).
            throw ReelError(.invalidConfiguration, "\(url.path) is not a regular file", hint: "choose a file for the frame log")
        }
        if exists && overwrite && Recovery.isBeingRecorded(url) {
            throw ReelError(.busy, "\(url.path) is being recorded right now by another program",
                            hint: "choose another file for the frame log")
        }
        let replaces = overwrite && exists
        let path = replaces ? FilePlacement.temporaryURL(beside: url, purpose: "new") : url
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (overwrite && !replaces ? O_TRUNC : O_EXCL)
        let url = self.url
        let fd = try Syscall.call(orThrow: { code in
            var error = Syscall.fileError(code, creating: url, action: "create the frame log")
            if error.code == .fileExists { error.hint = "choose another file for the frame log" }
            return error
        }) { open(path.path, flags, 0o644) }
        let names = Dictionary(uniqueKeysWithValues: sources.map { ($0.id, Self.quoted($0.name)) })
        let queue = Channel<Row>(capacity: 4096, policy: clock.isRealTime ? .dropNewest : .block)
        dropped.store(0, ordering: .relaxed)
        written.store(0, ordering: .relaxed)
        failure.withLock { $0 = nil }
        try state.withLock { s in
            guard !s.started else {
                Syscall.close(fd)
                throw ReelError(.alreadyRunning, "the frame log is already in use")
            }
            s.started = true
            s.origin = origin
            let header = recorder == nil ? "source,name,frame,capture_time,presentation_time\n" : Self.rawHeader
            s.worker = OutputWorker(name: "reel.framelog", channel: queue) { [self] queue in
                write(fd: fd, queue: queue, names: names, header: header, pendingName: replaces ? path : nil)
            }
        }
    }

    public func consume(_ sample: SourcedSample) {
        guard case .video(let frame) = sample.sample, let (worker, origin) = state.withLock({ s in s.worker.map { ($0, s.origin) } }) else { return }
        let row = Row(source: sample.source, frame: frame.sequenceNumber,
                      capture: frame.captureTime ?? origin + frame.presentationTime, presentation: frame.presentationTime)
        if !worker.send(row) { dropped.add(1, ordering: .relaxed) }
    }

    public func sourceEvent(_ event: SourceEvent, from source: SourceID) {}

    public func finish() async {
        let worker = state.withLock { $0.worker }
        if let worker { await CaptureSession.offload { worker.finish() } }
        state.withLock { $0.worker = nil }
        // Rewritten only if this log wrote the file (it has rows) and could write all of it.
        guard worker != nil, rowsWritten > 0, error == nil, let recorder else { return }
        // Now if the recording has ended (else when it does, on its thread).
        let url = self.url
        await CaptureSession.offload {
            recorder.whenEnded { [self] frames in
                guard let frames else { return }  // failed: the raw rows stay, with session times
                do { try Self.rewrite(url, for: frames) } catch { report(error as? ReelError ?? ReelError(.ioFailure, "cannot rewrite the frame log \(url.path): \(error)")) }
            }
        }
    }

    private static let rawHeader = "source,name,frame,capture_time,session_time\n"

    /// Rewrites the raw rows at `url` with the recording's file times and a `recorded` column,
    /// into a new file that then takes the log's name. On a failure the raw rows stay and the
    /// error is thrown.
    private static func rewrite(_ url: URL, for frames: RecordedFrames) throws {
        let temporary = FilePlacement.temporaryURL(beside: url, purpose: "rewriting")
        guard let input = FileHandle(forReadingAtPath: url.path) else {
            throw ReelError(.ioFailure, "cannot read the frame log \(url.path) back to give it the recording's times")
        }
        defer { try? input.close() }
        let fd = try Syscall.call(orThrow: { Syscall.fileError($0, creating: temporary, action: "rewrite the frame log as") }) {
            open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        }
        var failed: ReelError?
        var out = "source,name,frame,capture_time,presentation_time,recorded\n"
        func flush() {
            let bytes = Array(out.utf8)
            out.removeAll(keepingCapacity: true)
            guard failed == nil else { return }
            do { try writeAll(fd, bytes, to: url) } catch { failed = error as? ReelError }
        }
        var pending = Data()
        var first = true
        var lastFrame: [Int: Int64] = [:]
        func take(_ line: Substring) {
            if first { first = false; if line + "\n" == rawHeader[...] { return } }
            guard !line.hasPrefix("#") else { out += line + "\n"; return }
            // source,name,frame,capture,session: the name may hold commas (quoted), the numbers not.
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count >= 5, let source = Int(fields[0]), let frame = Int64(fields[fields.count - 3]),
                  let session = Self.time(fields[fields.count - 1]) else { out += line + "\n"; return }
            let head = fields.dropLast().joined(separator: ",")
            // The numbers the source skipped: frames it dropped, a row each.
            if let before = lastFrame[source], frame > before + 1 {
                let who = fields.dropLast(3).joined(separator: ",")
                for skipped in (before + 1)..<frame { out += "\(who),\(skipped),,,dropped\n" }
            }
            lastFrame[source] = max(lastFrame[source] ?? frame, frame)
            if let time = frames.fileTime(of: frame, source: SourceID(source), at: session) {
                out += "\(head),\(Self.seconds(time)),yes\n"
            } else {
                out += "\(head),,no\n"
            }
            if out.utf8.count > 1 << 16 { flush() }
        }
        while failed == nil, let chunk = try? input.read(upToCount: 1 << 16), !chunk.isEmpty {
            pending.append(chunk)
            guard let cut = pending.lastIndex(of: UInt8(ascii: "\n")) else { continue }
            let text = String(decoding: pending[..<cut], as: UTF8.self)
            pending.removeSubrange(...cut)
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) { take(line) }
        }
        if !pending.isEmpty { take(Substring(String(decoding: pending, as: UTF8.self))) }
        flush()
        // On the disk before it takes the log's name: a crash then leaves the raw rows or the
        // rewritten ones, never an empty log.
        if failed == nil, case .failure(let e) = Syscall.attempt({ fsync(fd) }) {
            failed = Syscall.fileError(e.rawValue, creating: temporary, action: "rewrite the frame log as")
        }
        Syscall.close(fd)
        if failed == nil, Recovery.isBeingRecorded(url) {
            // A recording begun at the log's name meanwhile is never replaced.
            failed = ReelError(.busy, "the frame log's rows were not given the recording's times: \(url.path) is being recorded right now by another program")
        }
        guard let failed else {
            return try FilePlacement.replaceDurably(url, withSynced: temporary, action: "replace the frame log")
        }
        _ = Syscall.attempt { unlink(temporary.path) }
        throw failed
    }

    /// Seconds written by ``seconds(_:)`` read back (microseconds).
    private static func time(_ text: Substring) -> MediaTime? {
        let negative = text.hasPrefix("-")
        let parts = text.dropFirst(negative ? 1 : 0).split(separator: ".")
        guard parts.count == 2, let whole = Int64(parts[0]), let micro = Int64(parts[1]), parts[1].count == 6 else { return nil }
        let us = whole * 1_000_000 + micro
        return MediaTime(value: negative ? -us : us, timescale: 1_000_000)
    }

    /// Writes all of `bytes` to `fd`, the frame log `url` or a file standing in for it.
    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], to url: URL) throws {
        try bytes.withUnsafeBytes { try Syscall.writeAll(fd, $0, orThrow: { Syscall.fileError($0, at: url, action: "write the frame log") }) }
    }

    /// Writes the rows; `pendingName` is where the file is until its first row, when it takes
    /// the log's name (without any row it goes, and a log it was to replace stays).
    private func write(fd: Int32, queue: Channel<Row>, names: [SourceID: String], header: String, pendingName: URL?) {
        var buffer = header
        var failed = false
        var pendingName = pendingName
        // The rows reach the disk at least once a second, not only each 64 kB (about 50 s of
        // rows at 30 fps): a disk that fills later, or a crash, keeps the rows before it. A log
        // whose disk filled three seconds in had none (issue 26, F9).
        var flushed = ContinuousClock.now
        func flush() {
            flushed = ContinuousClock.now
            defer { buffer.removeAll(keepingCapacity: true) }
            guard !failed else { return }  // the rows have nowhere to go; the recording goes on
            do { try Self.writeAll(fd, Array(buffer.utf8), to: url) } catch {
                failed = true
                report(error as? ReelError ?? ReelError(.ioFailure, "cannot write the frame log \(url.path)"))
            }
        }
        while let row = queue.receive() {
            if let pending = pendingName {
                // A rename ignores locks: a recording begun there meanwhile is never replaced.
                if Recovery.isBeingRecorded(url) {
                    failed = true
                    report(ReelError(.busy, "the frame log was not written: \(url.path) is being recorded right now by another program",
                                     hint: "choose another file for the frame log"))
                } else if case .failure(let e) = Syscall.attempt({ rename(pending.path, url.path) }) {
                    failed = true
                    report(Syscall.fileError(e.rawValue, creating: url, action: "replace the frame log"))
                } else {
                    pendingName = nil
                }
                if failed { _ = Syscall.attempt { unlink(pending.path) }; pendingName = nil }
            }
            buffer += "\(row.source.rawValue),\(names[row.source] ?? ""),\(row.frame),\(Self.seconds(row.capture)),\(Self.seconds(row.presentation))\n"
            written.add(1, ordering: .relaxed)
            if buffer.utf8.count > 1 << 16 || ContinuousClock.now - flushed >= .seconds(1) { flush() }
        }
        let lost = dropped.load(ordering: .relaxed)
        if lost > 0 { buffer += "# \(lost) rows dropped: the log fell behind\n" }
        flush()
        Syscall.close(fd)
        if let pending = pendingName { _ = Syscall.attempt { unlink(pending.path) } }
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
