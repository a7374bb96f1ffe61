import Foundation
import Dispatch
import Reel

/// `reel record`: builds a capture session from the options, records until the duration is
/// reached or the user stops it, and says where the file went and what it holds.
struct RecordCommand {
    let options: RecordOptions
    let console: Console
    let environment: [String: String]

    static let help = """
    Usage: reel record [SOURCES] [OPTIONS] [-o FILE]

    Records a screen, the built-in test camera, a microphone, application audio or the test
    tone into an MP4, MOV or MKV file. Stop with Ctrl-C (or SIGTERM): the file is finalised.
    A second Ctrl-C aborts at once; the file then keeps everything up to its last fragment.
    On a terminal, space pauses and resumes and q or Enter stops; otherwise SIGUSR1 toggles
    pause. Pausing takes the gap out of the file, or with --pause-mode clips ends a clip;
    the clips are merged into the file when recording stops.

    Examples:
      reel record --screen --mic --app-audio
      reel record --screen=:1 --region 1280x720+0+0 --fps 60 -o demo.mp4
      reel record --test-pattern --tone --duration 5 -o test.mp4

    """

    /// Runs the recording; returns the exit status.
    func run() async -> Int32 {
        let url: URL
        do {
            url = try resolveOutput()
            try OutputLocation.check(url, overwrite: options.overwrite)
        } catch let error as ReelError {
            return fail(error)
        } catch {
            return fail(ReelError(.ioFailure, "\(error)"))
        }

        let session = options.virtualClock ? CaptureSession(clock: ManualClock()) : CaptureSession()
        do {
            for source in makeSources() { try session.addInput(source) }
        } catch let error as ReelError {
            return fail(error)
        } catch {
            return fail(ReelError(.invalidConfiguration, "\(error)"))
        }
        var settings = Recorder.Settings(container: options.container, video: options.video, audio: options.audio,
                                         mixesAudio: options.mixesAudio, overwrite: options.overwrite)
        settings.maxRecordedDuration = options.limit
        settings.pauseMode = options.pauseMode
        settings.maxFileSize = options.maxFileSize
        settings.minimumFreeSpace = options.minimumFreeSpace > 0 ? options.minimumFreeSpace : nil
        if let folder = options.keepClips {
            settings.clipsFolder = folder
            settings.keepsClips = true
        }
        let recorder = Recorder(url: url, settings: settings)
        do {
            try session.addOutput(recorder)
            try await session.start()
        } catch let error as ReelError {
            return fail(error)
        } catch {
            return fail(ReelError(.sourceUnavailable, "\(error)"))
        }

        // Once recording has started, so that a failure to start is reported alone.
        if !options.json {
            for cut in Recovery.cutOffRecordings(in: url.deletingLastPathComponent()) where cut.path != url.path {
                console.err("reel: note: \(cut.path) looks cut off (unless another recording is writing it now); recover it with: reel recover \"\(cut.path)\"")
            }
        }
        let stopper = SignalStopper(console: console, url: url) {
            Task { await session.stop() }
        }
        let renderer = ProgressRenderer(console: console, json: options.json)
        let keys = KeyControls(recorder: recorder, console: console, interactive: console.isTerminal && !options.json) {
            Task { await session.stop() }
        }
        renderer.controlsHint = keys.isInteractive
        let events = Task {
            for await event in recorder.events { renderer.render(event) }
        }
        let sessionEvents = Task {
            for await event in session.events { renderer.render(event) }
        }
        let outcome: Result<RecordingSummary, ReelError>
        do {
            outcome = .success(try await recorder.result())
        } catch let error as ReelError {
            outcome = .failure(error)
        } catch {
            outcome = .failure(ReelError(.encodingFailed, "\(error)"))
        }
        await session.stop()
        stopper.cancel()
        keys.cancel()
        await events.value
        sessionEvents.cancel()
        renderer.finishLine()
        switch outcome {
        case .success(let summary):
            if !options.json { renderer.printSummary(summary) }
            return 0
        case .failure(let error):
            return fail(error)
        }
    }

    private func resolveOutput() throws -> URL {
        if let output = options.output { return output }
        let folder = OutputLocation.videosDirectory(environment: environment)
        if !FileManager.default.fileExists(atPath: folder.path) {
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch {
                throw ReelError(.permissionDenied, "cannot create \(folder.path)", hint: "choose a file with -o")
            }
        }
        return folder.appendingPathComponent(OutputLocation.datedName(container: options.container))
    }

    private func makeSources() -> [any CaptureSource] {
        var sources: [any CaptureSource] = []
        if let display = options.screen {
            sources.append(X11ScreenSource(display: display, region: options.region, frameRate: options.frameRate,
                                           drawsCursor: options.drawsCursor))
        }
        if options.testPattern {
            sources.append(TestPatternSource(size: options.size ?? PixelSize(width: 1280, height: 720), frameRate: options.frameRate))
        }
        if options.tone { sources.append(ToneSource()) }
        if let name = options.microphone { sources.append(PulseAudioSource.microphone(source: name)) }
        if let name = options.appAudio { sources.append(PulseAudioSource.appAudio(sink: name)) }
        return sources
    }

    private func fail(_ error: ReelError) -> Int32 {
        if options.json {
            console.out(ProgressRenderer.json(["event": "failed", "code": error.code.rawValue, "message": error.description]))
        }
        console.err("reel: error: \(error.description)")
        return 1
    }
}

/// Ctrl-C and SIGTERM: the first stops and finalises, a second aborts at once.
final class SignalStopper: @unchecked Sendable {
    private var sources: [DispatchSourceSignal] = []
    private var count = 0
    private let lock = NSLock()

    init(console: Console, url: URL, stop: @escaping @Sendable () -> Void) {
        for signo in [SIGINT, SIGTERM] {
            signal(signo, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signo, queue: .global())
            source.setEventHandler { [weak self] in
                guard let self else { return }
                self.lock.lock()
                self.count += 1
                let n = self.count
                self.lock.unlock()
                if n == 1 {
                    if console.isTerminal { console.errRaw("\r\u{1B}[2K") }
                    console.err("Stopping… (press Ctrl-C again to abort)")
                    stop()
                } else {
                    console.err("reel: aborted; \(url.path) keeps what was recorded up to its last fragment (reel can finalise it later)")
                    _exit(130)
                }
            }
            source.resume()
            sources.append(source)
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
