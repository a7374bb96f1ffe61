import Foundation
import Reel

/// `reel record --control`: the recording's control socket (the library's ``ControlServer``)
/// and what its commands do with the recording's parts. Events reach subscribers as the
/// JSON lines `--json` prints.
final class RecordControl: @unchecked Sendable {
    /// The commands, as `reel control --help` and the man page list them.
    static let commands: [(name: String, argument: String?, help: String)] = [
        ("status", nil, "state, elapsed, bytes, frames, dropped, sources, streams, replay"),
        ("pause", nil, "pause the recording"),
        ("resume", nil, "resume it"),
        ("stop", nil, "stop and finalise the file, as q or Ctrl-C"),
        ("abort", nil, "stop at once without finalising, as a second Ctrl-C (the file keeps what reached the disk)"),
        ("save-replay", nil, "save the replay buffer (--replay), as r"),
        ("marker", "TITLE", "put a chapter marker here, as m"),
        ("filter", "[N:]FILTER", "filter the picture (as --filter; none removes every filter, N:none source N's)"),
        ("swap", nil, "swap the composed pictures, as s"),
        ("subscribe", nil, "keep the connection and receive every event --json prints"),
    ]

    let server: ControlServer
    private let lock = NSLock()
    private var progress: RecordingProgress?
    private var stopping = false
    /// Whether a pause starts a new clip (`--pause-mode clips`); in one file there are no clips.
    private let pauseMakesClips: Bool
    /// The seconds before a scheduled start (`--delay`, `--start-at`); `nil` once begun.
    private let waitingUntilStart: (@Sendable () -> Double?)?

    /// Listens at `path` (made safely: see ``ControlServer``) for the recording of `parts`.
    init(path: URL, parts: RecordingParts, signals: RecordSignals, renderer: ProgressRenderer, sourceNames: [String],
         videoSources: [any CaptureSource], file: URL?) throws {
        pauseMakesClips = renderer.pauseMakesClips
        waitingUntilStart = renderer.waitingUntilStart
        let owner = Owner()
        // A socket given a path is linked as PID.sock in the default folder (when there is
        // one), so that `reel control PID` and `reel control` alone find it.
        server = try ControlServer(path: path, listedIn: try? ControlServer.defaultFolder()) { request, respond in
            guard let control = owner.control else { return respond(.failure(ReelError(.notRunning, "the recording is ending"))) }
            control.handle(request, respond: respond, parts: parts, signals: signals, sourceNames: sourceNames,
                           videoSources: videoSources, file: file)
        }
        owner.control = self
        let server = self.server
        renderer.eventListener = { server.publish(jsonLine: $0) }
    }

    /// Keeps what status answers.
    func note(_ event: RecordingEvent) {
        lock.lock(); defer { lock.unlock() }
        switch event {
        case .progress(let p): progress = p
        case .finished, .failed, .merging: stopping = true
        default: break
        }
    }

    /// Removes the socket.
    func close() { server.close() }

    /// Where the socket of this process goes without a path: `$XDG_RUNTIME_DIR/reel/PID.sock`.
    static func defaultPath() throws -> URL {
        do {
            return try ControlServer.defaultPath()
        } catch var error as ReelError where error.code == .invalidConfiguration {
            error.hint = "give the socket a path: --control=PATH"
            throw error
        }
    }

    private func handle(_ request: ControlServer.Request, respond: @escaping ControlServer.Responder, parts: RecordingParts,
                        signals: RecordSignals, sourceNames: [String], videoSources: [any CaptureSource], file: URL?) {
        func fail(_ message: String, hint: String? = nil, code: ReelError.Code = .invalidConfiguration) {
            respond(.failure(ReelError(code, message, hint: hint)))
        }
        guard let recorder = parts.recorder else { return fail("the recording has not started", code: .notRunning) }
        do {
            switch request.command {
            case "status":
                respond(.success(status(recorder: recorder, parts: parts, sourceNames: sourceNames, file: file)))
            case "pause", "resume":
                // The wait for a scheduled start is not a pause: nothing to pause or resume yet.
                if let left = waitingUntilStart?() {
                    return fail(RecordKeyActions.notYet(left), hint: "stop gives up the scheduled recording", code: .notRunning)
                }
                guard request.command == "resume" else {
                    try recorder.pause()
                    return respond(.success(["paused": true]))
                }
                try recorder.record()
                respond(.success(["paused": false]))
            case "stop":
                // What the stop leads to: a file finalised, nothing (before a scheduled start), no file.
                let outcome = waitingUntilStart?() != nil ? "nothingWritten" : file == nil ? "noFile" : "finalising"
                // A second stop while stopping is answered, not taken as an abort (abort is asked by name).
                let first = signals.requestStop()
                respond(.success(["stopping": true, "outcome": outcome, "already": !first]))
            case "abort":
                respond(.success(["aborting": true]))
                // After the reply has gone out (closing the server writes what waits).
                let server = self.server
                DispatchQueue.global().async { signals.abort { server.close() } }
            case "save-replay":
                guard let replay = parts.replay else {
                    return fail("this recording keeps no replay buffer", hint: "record with --replay to save the last seconds")
                }
                Task {
                    switch await replay.saveReportingFile() {
                    case .success(let url): respond(.success(["file": url.path]))
                    case .failure(let error): respond(.failure(CommandLineHints.rephrased(error)))
                    }
                }
            case "marker":
                guard file != nil else { return fail("this recording writes no file to put a marker in") }
                // Before a scheduled start there is no recording to mark, as there is none to pause.
                if let left = waitingUntilStart?() {
                    return fail(RecordKeyActions.notYet(left), hint: "place markers once it has started", code: .notRunning)
                }
                try recorder.addMarker(request.argument)
                respond(.success(["marked": true]))
            case "filter":
                guard let text = request.argument, !text.isEmpty else {
                    return fail("filter needs a filter: [N:]FILTER, a look (mono, comic, crystal), a libavfilter graph, or none")
                }
                let (target, graph) = try RecordOptions.splitFilter(text, videoSourceCount: videoSources.count, what: "filter \(text)")
                guard !videoSources.isEmpty else { return fail("this recording has no picture to filter") }
                let filter = graph == "none" ? nil : try VideoFilter(parsing: graph)
                if filter == nil, target == nil {
                    // `none` alone takes off every filter: the whole picture's and each source's.
                    try parts.compositor?.setVideoFilter(nil)
                    for source in videoSources { try parts.session?.setVideoFilter(nil, for: source) }
                } else if let target {
                    try parts.session?.setVideoFilter(filter, for: videoSources[target - 1])
                } else if let compositor = parts.compositor {
                    try compositor.setVideoFilter(filter)
                } else {
                    try parts.session?.setVideoFilter(filter, for: videoSources[0])
                }
                respond(.success(["filter": filter?.description ?? "none"]))
            case "swap":
                guard let compositor = parts.compositor else {
                    return fail("there is one picture, nothing to swap", hint: "swapping needs two video sources")
                }
                compositor.swap()
                respond(.success(["swapped": true]))
            default:
                fail("unknown command '\(request.command)'", hint: "one of: " + Self.commands.map(\.name).joined(separator: ", "))
            }
        } catch let error as ReelError {
            respond(.failure(CommandLineHints.rephrased(error)))
        } catch let error as UsageError {
            fail(error.message)
        } catch {
            fail("\(error)", code: .ioFailure)
        }
    }

    private func status(recorder: Recorder, parts: RecordingParts, sourceNames: [String], file: URL?) -> [String: any Sendable] {
        let (p, ending) = { lock.lock(); defer { lock.unlock() }; return (progress, stopping) }()
        let waiting = ending ? nil : waitingUntilStart?()
        let state = ending ? "stopping" : !recorder.isRecording ? "starting" : waiting != nil ? "waiting" : recorder.isPaused ? "paused" : "recording"
        var fields: [String: any Sendable] = ["state": state, "elapsed": Self.rounded(p?.duration.seconds ?? 0),
                                              "bytes": p?.bytes ?? 0, "frames": p?.frames ?? 0, "dropped": recorder.droppedFrames,
                                              "sources": sourceNames, "pid": Int(getpid())]
        if let file { fields["file"] = file.path }
        if let waiting {
            fields["startsIn"] = Self.rounded(waiting)
            fields["startsAt"] = ProgressRenderer.wallClock(in: waiting)
        }
        // As --json's progress counts them: clips in clip mode, pauses in one file.
        let counted = ProgressRenderer.parts(p?.clipCount ?? 1, pauseMakesClips: pauseMakesClips)
        fields[counted.key] = counted.count
        // Names without their keys (LiveStream.Statistics never holds one).
        fields["streams"] = (p?.streams ?? []).map { Self.sendable(StreamProgress.json($0)) }
        if let replay = parts.replay {
            let held = replay.buffer.statistics
            fields["replay"] = ["bytes": held.bytes, "duration": Self.rounded(held.videoDuration.seconds), "saved": replay.saved] as [String: any Sendable]
        }
        return fields
    }

    private static func rounded(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }

    /// A JSON value made of strings, numbers, booleans, arrays and objects, as a reply holds it.
    private static func sendable(_ value: Any) -> any Sendable {
        switch value {
        case let v as String: return v
        case let v as Bool: return v
        case let v as Int: return v
        case let v as Int64: return v
        case let v as Double: return v
        case let v as [Any]: return v.map(sendable)
        case let v as [String: Any]: return v.mapValues(sendable)
        default: return "\(value)"
        }
    }

    /// Who answers the socket's requests, until the control is gone.
    private final class Owner: @unchecked Sendable {
        weak var control: RecordControl?
    }
}
