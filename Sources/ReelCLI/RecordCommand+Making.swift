import Foundation
import Reel

/// What `reel record` makes before it records: its sources, its output file, its replay
/// buffer and per-source recorders; and how it fails.
extension RecordCommand {
    /// `--replay`'s buffer and its saver, its folder made and checked (and the buffer's spill
    /// files made there with `--replay-spill`); `nil` without `--replay`. `output`: the file
    /// recorded beside it, which the folder must not be.
    func makeReplaySaver(output: URL?, renderer: ProgressRenderer) throws -> ReplaySaver? {
        guard let keep = options.replay else { return nil }
        let folder = options.replayDirectory ?? OutputLocation.videosDirectory(environment: environment)
        if let output, folder.standardizedFileURL.path == output.standardizedFileURL.path {
            throw ReelError(.fileExists, "-o and --replay-dir both name \(output.path)", hint: "give --replay-dir a folder of its own")
        }
        let made = try ReplaySaver.prepareFolder(folder, console: console)
        let buffer: ReplayBuffer
        do {
            // As -o's disk is checked (--min-free): a replay folder without room loses every save.
            if options.minimumFreeSpace > 0, let free = FreeSpace.of(folder)?.available {
                if free < options.minimumFreeSpace {
                    throw ReelError(.insufficientStorage, "only \(free / 1_000_000) MB free in \(folder.path) for the replays",
                                    hint: "free some space there, choose another --replay-dir, or lower --min-free")
                }
            }
            buffer = try ReplayBuffer(duration: keep, maxBytes: options.replayMaxSize, spillFolder: options.replaySpills ? folder : nil)
        } catch {
            if made { rmdir(folder.path) }
            throw error
        }
        // A GIF's replays are saved as what it is recorded in (MP4): the buffer holds its encode.
        return ReplaySaver(buffer: buffer, folder: folder, container: options.container.intermediateContainer ?? options.container, console: console,
                           json: options.json, beforePrinting: { renderer.clearForPrint() }, onEvent: { renderer.forward($0) })
    }

    /// The notes on what earlier recordings left in the folder: one line for the cut-off files
    /// and one for the unmerged clips folders, however many there are, each with the command
    /// that recovers them (listing every path up to five; past that, the first few).
    static func leftoverNotes(cutOff: [URL], unmerged: [URL]) -> [String] {
        func note(_ urls: [URL], one: String, many: (String, String), verb: String) -> String? {
            guard let first = urls.first else { return nil }
            if urls.count == 1 { return "\(Format.path(first)) \(one); \(verb) it with: reel recover \(Shell.quoted(first.path))" }
            let folder = Format.path(first.deletingLastPathComponent())
            let names = urls.prefix(5).map { Format.path($0.lastPathComponent) }.joined(separator: ", ") + (urls.count > 5 ? " and \(urls.count - 5) more" : "")
            let command = urls.count > 5 ? "reel recover FILE for each" : "reel recover " + urls.map { Shell.quoted($0.path) }.joined(separator: " ")
            return "\(urls.count) \(many.0) in \(folder) \(many.1) (\(names)); \(verb) them with: \(command)"
        }
        return [note(cutOff, one: "looks cut off", many: ("recordings", "look cut off"), verb: "recover"),
                note(unmerged, one: "holds the clips of a recording that was never merged",
                     many: ("folders", "hold the clips of recordings that were never merged"), verb: "merge")].compactMap { $0 }
    }

    /// Whether a clip in `folder` is being written right now (another recording in clip mode).
    static func isBeingRecorded(_ folder: URL) -> Bool {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.contains { Recovery.isBeingRecorded(folder.appendingPathComponent($0)) }
    }

    /// What to do about a --frame-log file that cannot be written (the checks speak of -o).
    static func frameLogHint(for error: ReelError) -> String {
        switch error.code {
        case .fileExists where error.message.hasSuffix("is a folder"): return "give --frame-log a file name"
        case .fileExists where error.message.hasSuffix("is a video file, not a frame log"): return "choose another file for --frame-log (--overwrite never replaces a video with a log)"
        case .fileExists: return "choose another file for --frame-log, or pass --overwrite"
        case .ioFailure: return "create it, or choose another file for --frame-log"
        default: return "choose another file for --frame-log"
        }
    }

    /// The file to record into, and whether reel made its name (a dated name, reserved by
    /// creating it empty: the recorder then replaces that empty file of its own).
    func resolveOutput() throws -> (url: URL, reserved: Bool) {
        if let output = options.output { return (output, false) }
        if let folder = options.outputFolder {
            return (try OutputLocation.reserveDatedFile(in: folder, container: options.container), true)
        }
        let folder = OutputLocation.videosDirectory(environment: environment)
        if !FileManager.default.fileExists(atPath: folder.path) {
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch {
                throw ReelError(.permissionDenied, "cannot create \(folder.path)", hint: "choose a file with -o")
            }
        }
        return (try OutputLocation.reserveDatedFile(in: folder, container: options.container), true)
    }

    /// One recorder per video source, each connected to its source only, writing
    /// `folder/NN-name.ext`, and pausing and resuming with `main`: a pause must keep what the
    /// user paused to hide out of every file (they recorded on through pauses, s26 F13). With
    /// `--pause-mode clips` each takes the gap out as a single file does.
    func addOwnRecorders(for sources: [any CaptureSource], in folder: URL, to session: CaptureSession,
                         settings: Recorder.Settings, following main: Recorder) throws -> [(String, Recorder)] {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw ReelError(.permissionDenied, "cannot create the folder \(folder.path) for --each-source", hint: "choose another folder")
        }
        var own = settings
        own.overwrite = options.overwrite
        own.video.size = nil
        own.maxFileSize = nil
        own.pauseMode = .singleFile
        own.clipsFolder = nil
        own.keepsClips = false
        var recorders: [(String, Recorder)] = []
        for (i, source) in sources.enumerated() {
            let safe = String(source.name.map { $0.isLetter || $0.isNumber ? $0 : "-" }.prefix(40))
                .split(separator: "-", omittingEmptySubsequences: true).joined(separator: "-")
            let file = folder.appendingPathComponent(String(format: "%02d-%@.%@", i + 1, safe.isEmpty ? "source" : safe,
                                                            options.container.fileExtension))
            for location in options.cameras {
                if case .file(let input) = location, RecordingFile.isSameFile(file, input) {
                    throw ReelError(.invalidConfiguration, "--each-source would write \(file.path), the file played as a camera",
                                    hint: "choose another folder for --each-source")
                }
            }
            try RecordingFile.checkPlace(for: file, overwrite: options.overwrite)
            let recorder = Recorder(url: file, settings: own)
            try session.addOutput(recorder, connectedTo: [source])
            main.addPauseFollower(recorder)
            recorders.append((source.name, recorder))
        }
        return recorders
    }

    /// The process that shows the window `window` records (choosing the window now: the focus,
    /// or the click of `--window=pick`), for `--window --app-audio`.
    ///
    /// - Throws: when the window does not say which process shows it.
    static func processShowing(_ window: X11WindowSource) throws -> Int32 {
        _ = try window.prepare()
        guard let pid = window.processID else {
            throw ReelError(.invalidConfiguration,
                            "\(window.name) does not say which process shows it (it has no _NET_WM_PID), so --app-audio cannot record its application's sound alone",
                            hint: "name the application: --app-audio=APP (reel devices lists those playing), or record every application's sound with --app-audio=@DEFAULT_SINK@")
        }
        return pid
    }

    /// `--region` as recorded on X11: made even (4:2:0 video needs an even width and height),
    /// as a region picked by hand is, and said once when it was not: its last column or row
    /// is left out, not the picture squeezed. A `still` (`reel shot`) is the region as given.
    private func recordedRegion(still: Bool) -> PixelRect? {
        guard let region = options.region else { return nil }
        guard !still else { return region }
        let even = region.evenSized
        if even != region {
            console.err("reel: note: the region \(region) is recorded as \(even): video needs an even width and height, so its last \(region.width != even.width && region.height != even.height ? "column and row are" : region.width != even.width ? "column is" : "row is") left out")
        }
        return even
    }

    /// `--size` made even (4:2:0 video needs an even width and height), said once when it was
    /// not: the picture is recorded at the size said, not at the one given.
    func noteEvenSize() {
        guard let given = options.sizeAsGiven, let size = options.size else { return }
        console.err("reel: note: --size \(given) is recorded as \(size): video needs an even width and height")
    }

    /// `isCancelled`: a stop came (it gives up a region being picked). `still`: for one picture
    /// (`reel shot`), which needs no even size.
    func makeSources(still: Bool = false, isCancelled: @escaping @Sendable () -> Bool = { false }) throws -> [any CaptureSource] {
        var sources: [any CaptureSource] = []
        // `--window --app-audio` (no name): the window's application's sound.
        var windowProcess: Int32?
        let windowsSound = options.window != nil && options.appAudio == .some(nil)
            && options.appAudioApplications.isEmpty && options.appAudioExcept.isEmpty
        // Routing that an earlier recording of application audio left (it and its guard died).
        ApplicationAudioGuard.restoreLeftovers(console: console, environment: environment,
                                               scanningServer: options.appAudio != nil)
        if let screen = options.screen {
            switch ScreenLocation(argument: screen, environment: environment) {
            case .x11(let display) where options.window != nil:
                if options.window == .pick {
                    console.err("reel: click the window to record (the pointer and the keyboard are grabbed until then; Esc or Ctrl-C gives up)")
                }
                let window = X11WindowSource(display: display, window: options.window ?? .focused, resizeMode: options.windowResize,
                                             frameRate: options.frameRate, drawsCursor: options.drawsCursor)
                if windowsSound { windowProcess = try Self.processShowing(window) }
                sources.append(window)
            case .wayland where options.window != nil:
                try options.refusePresenterOnWayland()
                // The portal's dialog chooses the window: it cannot be named, and fill is X11's.
                guard options.window == .focused || options.window == .pick else {
                    throw ReelError(.invalidConfiguration, "on Wayland --window cannot name a window: the desktop portal's dialog chooses it",
                                    hint: "use --window alone (or --window=pick), or --screen=:N for a window of an X display such as XWayland's")
                }
                guard !windowsSound else {
                    throw ReelError(.invalidConfiguration,
                                    "on Wayland reel cannot tell which application shows the window the desktop portal shares, so --app-audio cannot record its sound alone",
                                    hint: "name the application: --app-audio=APP (reel devices lists those playing), or record every application's sound with --app-audio=@DEFAULT_SINK@")
                }
                guard options.windowResize == .fit else {
                    throw ReelError(.invalidConfiguration, "--window-size fill is offered on X11 only; on Wayland a resized window is fitted",
                                    hint: "leave --window-size out")
                }
                sources.append(WaylandScreenSource(frameRate: options.frameRate, drawsCursor: options.drawsCursor, sharesWindow: true))
            case .x11(let display):
                if options.picksRegion {
                    console.err("reel: drag a rectangle over the part of the screen to record (the pointer and the keyboard are grabbed until then; Esc or Ctrl-C gives up)")
                    // The source captures on the connection the region was picked on.
                    // Said once the sources are prepared, with a window clicked (PickedSelection).
                    sources.append(try X11ScreenSource.pickingRegion(display: display, frameRate: options.frameRate,
                                                                     drawsCursor: options.drawsCursor, isCancelled: isCancelled))
                } else {
                    sources.append(X11ScreenSource(display: display, region: recordedRegion(still: still), frameRate: options.frameRate,
                                                   drawsCursor: options.drawsCursor))
                }
            case .wayland where options.picksRegion:
                throw ReelError(.invalidConfiguration, "on Wayland the desktop portal's own dialog chooses what is shared, so there is no region to drag",
                                hint: "leave out --region pick and choose the screen or a window in the portal's dialog (--screen-choose asks again)")
            case .wayland:
                try options.refusePresenterOnWayland()
                sources.append(WaylandScreenSource(region: options.region, frameRate: options.frameRate,
                                                   drawsCursor: options.drawsCursor, choosesAgain: options.choosesScreen))
            }
        }
        // With several video sources the composed size is --size; each camera keeps its own.
        let cameraSize = options.videoSourceCount > 1 ? nil : options.size
        for location in options.cameras {
            switch Cameras.authorizationStatus(for: location) {
            case .authorized: break
            case .absent:
                throw ReelError(.sourceUnavailable, "there is no camera at \(location)",
                                hint: "reel devices lists the cameras; --camera=test records the built-in test camera")
            case .busy:
                throw ReelError(.busy, "\(location) is in use by another program", hint: "close the other program, or choose another camera")
            case .denied(let hint):
                throw ReelError(.permissionDenied, "no permission to use \(location)", hint: hint)
            }
            let camera = try Cameras.source(for: location, size: cameraSize ?? (location.isTestPattern ? PixelSize(width: 1280, height: 720) : nil),
                                            frameRate: options.frameRate)
            if let zoom = options.zoom {
                if let rate = zoom.rate { camera.ramp(toVideoZoomFactor: zoom.factor, withRate: rate) } else { camera.videoZoomFactor = zoom.factor }
            }
            sources.append(camera)
        }
        if options.testPattern {
            let pattern = TestPatternSource(size: cameraSize ?? PixelSize(width: 1280, height: 720), frameRate: options.frameRate)
            if let zoom = options.zoom {
                if let rate = zoom.rate { pattern.ramp(toVideoZoomFactor: zoom.factor, withRate: rate) } else { pattern.videoZoomFactor = zoom.factor }
            }
            sources.append(pattern)
        }
        if options.tone { sources.append(ToneSource()) }
        if let name = options.microphone { sources.append(PulseAudioSource.microphone(source: name)) }
        if let source = try ApplicationAudioGuard.source(options, windowProcess: windowProcess, console: console, environment: environment) {
            sources.append(source)
        } else if let name = options.appAudio {
            sources.append(PulseAudioSource.appAudio(sink: name))
        }
        return sources
    }

    func fail(_ error: ReelError) -> Int32 {
        let error = CommandLineHints.rephrased(error)
        if options.json {
            console.out(ProgressRenderer.json(["event": "failed", "code": error.code.rawValue, "message": error.description]))
        }
        console.err("reel: error: \(Format.oneLine(error.description))")
        return 1
    }
}
