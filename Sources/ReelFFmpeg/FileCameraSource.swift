import Foundation
internal import CFFmpeg
import ReelCore
import Synchronization

/// A video file played as a camera: its pictures, decoded to `yuv420p`, delivered in real time
/// on the session clock at the file's own timestamps, looping by default.
///
/// Any video stream FFmpeg reads will do (the file's best video stream is played; audio is
/// ignored). Under a manual clock it paces by the clock and waits for free frames
/// (backpressure), so a test plays it faster than real time. A file that ends while not looping
/// reports ``SourceEvent/ended``; one that breaks while playing reports ``SourceEvent/lost(_:)``.
///
/// ```swift
/// let camera = FileCameraSource(url: URL(fileURLWithPath: "clip.mp4"))
/// try session.addInput(camera)
/// ```
public final class FileCameraSource: CameraSource {
    public let name: String
    public var kind: SampleKind { .video }
    /// The video file.
    public let url: URL
    /// Whether the file starts over when it ends.
    public let loops: Bool
    /// The size frames are delivered at; `nil` for the file's own size (rounded down to even).
    public let requestedSize: PixelSize?
    public let zoom = ZoomControl()

    /// How long opening a file may take before it counts as hostile.
    static let openTimeout = MediaTime(value: 10, timescale: 1)
    /// The longest gap between two pictures that is taken as it is; longer gaps (damaged or
    /// crafted timestamps) become one frame duration, so the camera never stalls for long.
    static let maximumGap = MediaTime(value: 10, timescale: 1)

    private struct Prepared: Sendable {
        var format: SourceFormat
        var size: PixelSize
        var frameDuration: MediaTime
    }
    private struct State {
        var prepared: Prepared?
        var gates: [ObjectIdentifier: InterruptGate] = [:]
    }
    private let state = Mutex(State())
    private let thread = CaptureThread<Prepared>(threadName: "reel.filecamera")

    /// Creates a camera that plays `url`.
    ///
    /// - Parameters:
    ///   - url: a video file.
    ///   - loops: whether to start over at the end (else the camera reports ``SourceEvent/ended``).
    ///   - size: the size to deliver frames at; `nil` keeps the file's size.
    ///   - name: a name for the camera; "file <name>" if `nil`.
    public init(url: URL, loops: Bool = true, size: PixelSize? = nil, name: String? = nil) {
        self.url = url
        self.loops = loops
        self.requestedSize = size
        self.name = name ?? "file \(url.lastPathComponent)"
    }

    deinit { stop() }

    /// Opens the file, decodes its first picture and reports its size and frame rate.
    ///
    /// - Throws: `.sourceUnavailable` when there is no such file; `.permissionDenied` when it
    ///   cannot be read; `.invalidMedia` for a folder, an empty file, a file that is not media,
    ///   is damaged or has no video; `.unsupportedFormat` for video this FFmpeg cannot decode;
    ///   `.invalidConfiguration` for a bad size.
    public func prepare() throws -> SourceFormat {
        if let prepared = state.withLock({ $0.prepared }) { return prepared.format }
        if let size = requestedSize, size.width < 2 || size.height < 2 || size.width % 2 != 0 || size.height % 2 != 0
            || size.width > VideoInput.maximumDimension || size.height > VideoInput.maximumDimension {
            throw ReelError(.invalidConfiguration, "camera size \(size) is not usable", hint: "use even sizes of at least 2x2")
        }
        try checkFile()
        let gate = InterruptGate()
        let video = try open(gate: gate)
        // The first picture proves the file plays.
        gate.arm(Self.openTimeout)
        defer { gate.disarm() }
        do {
            guard case .picture = try video.next() else {
                throw ReelError(.invalidMedia, "no picture of \(url.path) decodes",
                                hint: "the file is damaged or its video is empty")
            }
        } catch let error as ReelError {
            throw described(error, gate: gate)
        }
        let size = requestedSize ?? PixelSize(width: max(2, video.size.width & ~1), height: max(2, video.size.height & ~1))
        let rate = video.nominalFrameRate ?? FrameRate(30)
        let format = SourceFormat.video(size: size, pixelFormat: .yuv420p, frameRate: rate)
        return state.withLock { state in
            if let prepared = state.prepared { return prepared.format }
            state.prepared = Prepared(format: format, size: size, frameDuration: rate.frameDuration)
            return format
        }
    }

    /// Starts playing on a thread of its own.
    public func start(_ context: SourceContext) throws {
        _ = try prepare()
        try thread.start(sourceName: name, open: { _ in
            guard let prepared = state.withLock({ $0.prepared }) else { throw ReelError(.notRunning, "\(name) is not prepared") }
            return prepared
        }) { [self] prepared, thread in
            play(thread, context: context, prepared: prepared)
        }
    }

    /// Stops playing, abandoning a read in progress, and waits for the thread. Safe to call twice.
    public func stop() {
        thread.stop {
            for gate in state.withLock({ Array($0.gates.values) }) { gate.cancel() }
        }
    }

    // MARK: - Opening

    /// Refuses what is not a readable, non-empty regular file before FFmpeg sees it (a FIFO or
    /// a device could block it for ever).
    private func checkFile() throws {
        let path = url.path
        guard url.isFileURL else {
            throw ReelError(.invalidConfiguration, "\(url.absoluteString) is not a file",
                            hint: "use URLCameraSource for network streams")
        }
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            let code = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.code
            if code == Int(EACCES) {
                throw ReelError(.permissionDenied, "cannot look at \(path)", hint: "check the folder's permissions", errno: EACCES)
            }
            throw ReelError(.sourceUnavailable, "there is no video file at \(path)", hint: "check the path",
                            errno: code.map { Int32($0) })
        }
        switch attributes[.type] as? FileAttributeType {
        case .typeRegular?:
            break
        case .typeDirectory?:
            throw ReelError(.invalidMedia, "\(path) is a folder, not a video file", hint: "name a video file inside it")
        default:
            throw ReelError(.invalidMedia, "\(path) is not a regular file (a device, pipe or socket)",
                            hint: "play a video file")
        }
        guard ((attributes[.size] as? NSNumber)?.int64Value ?? 0) > 0 else {
            throw ReelError(.invalidMedia, "\(path) is empty", hint: "the file has no video in it; record or copy it again")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ReelError(.permissionDenied, "cannot read \(path)", hint: "check the file's permissions", errno: EACCES)
        }
    }

    /// Opens the file's best video stream; reads obey `gate`.
    private func open(gate: InterruptGate) throws -> VideoInput {
        FFmpeg.silenceLibraryLogging()
        state.withLock { $0.gates[ObjectIdentifier(gate)] = gate }
        defer { _ = state.withLock { $0.gates.removeValue(forKey: ObjectIdentifier(gate)) } }
        gate.arm(Self.openTimeout)
        defer { gate.disarm() }
        do {
            let input = try InputFile(url: url, readsStreamInfo: true, gate: gate)
            return try VideoInput(input: input)
        } catch let error as ReelError {
            throw described(error, gate: gate)
        }
    }

    /// An FFmpeg failure said in terms of this file.
    private func described(_ error: ReelError, gate: InterruptGate) -> ReelError {
        let path = url.path
        if gate.isCancelled { return ReelError(.sourceUnavailable, "stopped while opening \(path)") }
        if gate.hasExpired {
            return ReelError(.invalidMedia, "\(path) took longer than \(Int(Self.openTimeout.seconds)) s to open",
                             hint: "the file is damaged or crafted; play another file")
        }
        switch error.code {
        case .invalidMedia where error.message.hasPrefix("cannot read"):
            return ReelError(.invalidMedia, "\(path) is not a video file FFmpeg can read: \(FFmpeg.describe(error.averror ?? 0))",
                             hint: "the file is damaged, truncated or not media", errno: error.errno, averror: error.averror)
        case .invalidMedia, .unsupportedFormat, .permissionDenied, .sourceUnavailable:
            return error
        default:
            return ReelError(.invalidMedia, "cannot play \(path): \(error.message)",
                             hint: error.hint ?? "the file is damaged or not media", errno: error.errno, averror: error.averror)
        }
    }

    // MARK: - Playing

    private func play(_ thread: WorkerThread, context: SourceContext, prepared: Prepared) {
        let gate = InterruptGate()
        state.withLock { $0.gates[ObjectIdentifier(gate)] = gate }
        defer { _ = state.withLock { $0.gates.removeValue(forKey: ObjectIdentifier(gate)) } }
        if thread.isStopRequested { return }
        var video: VideoInput
        do {
            video = try open(gate: gate)
        } catch let error as ReelError {
            if !thread.isStopRequested { context.report(.lost(error)) }
            return
        } catch {
            return
        }
        let pool = FramePool(format: .yuv420p, size: prepared.size, capacity: 8)
        let converter = PictureConverter(size: prepared.size)
        let step = prepared.frameDuration
        let clock = context.clock
        // Under a real clock a frame this late is skipped, so that a slow decode catches up.
        let lateness = max(step * 4, MediaTime(value: 1, timescale: 5))

        // The first picture goes to the first frame slot at or after the start, so that file
        // cameras of one rate started a few milliseconds apart show their frames together.
        let startTicks = context.startTime().convertedValue(to: step.timescale, rounding: .up)
        let firstSlot = step.value > 0 ? (startTicks + step.value - 1) / step.value * step.value : startTicks
        var loopStart = MediaTime(value: firstSlot, timescale: step.timescale)  // timeline time of this pass's first picture
        var anchor: (ts: Int64, at: MediaTime)?  // a timestamp of this pass and its time in the pass
        var last: MediaTime?  // time in the pass of the last picture
        var sequence: Int64 = 0
        var picturesThisPass = 0
        while !thread.isStopRequested {
            let next: VideoInput.Next
            do {
                next = try video.next()
            } catch let error as ReelError {
                if !thread.isStopRequested {
                    context.report(.lost(ReelError(error.code, "\(url.lastPathComponent) broke off while playing: \(error.message)",
                                                   hint: error.hint ?? "the file is damaged or truncated",
                                                   errno: error.errno, averror: error.averror)))
                }
                return
            } catch {
                return
            }
            if case .endOfStream = next {
                guard picturesThisPass > 0 else {
                    context.report(.lost(ReelError(.invalidMedia, "no picture of \(url.path) decodes on a replay",
                                                   hint: "the file is damaged")))
                    return
                }
                guard loops else {
                    context.report(.ended)
                    return
                }
                loopStart = loopStart + (last ?? .zero) + step
                anchor = nil
                last = nil
                picturesThisPass = 0
                if !video.rewind() {
                    do {
                        video = try open(gate: gate)
                    } catch let error as ReelError {
                        if !thread.isStopRequested { context.report(.lost(error)) }
                        return
                    } catch {
                        return
                    }
                }
                continue
            }
            picturesThisPass += 1

            // The picture's time within this pass: its timestamp, kept increasing and free of
            // absurd gaps (a damaged or crafted file), else one frame after the last.
            let expected = last.map { $0 + step } ?? .zero
            var t = expected
            if let ts = video.pictureTimestamp {
                if let anchor, let since = video.pictureTime(since: anchor.ts) {
                    t = anchor.at + since
                } else {
                    anchor = (ts, expected)
                }
                if let previous = last, t <= previous || t - previous > Self.maximumGap {
                    t = expected
                    anchor = (ts, expected)
                }
            }
            last = t
            let pts = loopStart + t
            let index = sequence
            sequence += 1

            if !wait(until: context.origin + pts, clock: clock, thread: thread) { return }
            if clock.isRealTime, context.timelineNow() - pts > lateness {
                context.report(.droppedFrames(1, reason: .captureLate))
                continue
            }
            let made = clock.isRealTime
                ? pool.makeFrame(presentationTime: pts, sequenceNumber: index)
                : pool.makeFrameWaiting(presentationTime: pts, sequenceNumber: index)
            guard let frame = made else {
                context.report(.droppedFrames(1, reason: .encoderBehind))
                continue
            }
            do {
                try converter.convert(video.picture, into: frame)
            } catch {
                context.report(.droppedFrames(1, reason: .source))
                continue
            }
            context.deliver(.video(frame))
        }
    }

    /// Sleeps on the session clock until `deadline`; under a real clock in short slices, so that
    /// a stop is prompt. Returns `false` when the thread was asked to stop.
    private func wait(until deadline: MediaTime, clock: any MediaClock, thread: WorkerThread) -> Bool {
        guard clock.isRealTime else {
            clock.sleep(until: deadline)
            return !thread.isStopRequested
        }
        let slice = MediaTime(value: 1, timescale: 20)
        while !thread.isStopRequested {
            let now = clock.now()
            if now >= deadline { return true }
            clock.sleep(until: min(deadline, now + slice))
        }
        return false
    }
}
