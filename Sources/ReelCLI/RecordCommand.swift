import Foundation
import Dispatch
import Reel
import ReelPreview

/// `reel record`: builds a capture session from the options, records until the duration is
/// reached or the user stops it, and says where the file went and what it holds.
struct RecordCommand {
    let options: RecordOptions
    let console: Console
    let environment: [String: String]

    /// Runs the recording; returns the exit status.
    func run() async -> Int32 {
        // The signals are answered from the first moment: a stop while the session starts stops
        // it once started, and USR1/USR2 with nothing to do yet are ignored with a note.
        let parts = RecordingParts()
        // Named by -o: an abort from the first moment says a file there is unchanged.
        if options.writesFile, let output = options.output { parts.set(output: output, reserved: false) }
        let renderer = ProgressRenderer(console: console, json: options.json)
        renderer.replay = options.replay
        if let given = options.sizeAsGiven, let size = options.size { renderer.evenSize = (given, size) }
        renderer.writesFile = options.writesFile
        renderer.pauseMakesClips = options.pauseMode == .clips
        renderer.holdsFinished = options.json && (options.replay != nil || options.eachSource != nil || options.frameLog != nil)
        // --replay: a buffer fed by the recording's encoders, saved on request (made once -o is
        // known good: a bad -o makes no replay folder).
        if options.replay != nil && !options.writesFile { parts.setReplayOnly() }
        let saveReplay: (@Sendable () -> Void)? = options.replay == nil ? nil : { @Sendable in parts.replay?.save() }
        let signals = RecordSignals(console: console, canSwap: options.videoSourceCount > 1,
                                    stop: { Task { await parts.session?.stop() } },
                                    togglePause: { try? parts.recorder?.togglePause() },
                                    saveReplay: saveReplay,
                                    swap: { parts.compositor?.swap() },
                                    abortMessage: { [options, console] in
                                        let message = parts.abandon()
                                        // A script reading --json learns of the abort as of any other end.
                                        if options.json {
                                            var event: [String: Any] = ["event": "aborted", "message": message.replacingOccurrences(of: "reel: ", with: "")]
                                            if let kept = parts.keptByAbort { event["kept"] = kept.file; event["finish"] = kept.finish }
                                            console.out(ProgressRenderer.json(event))
                                        }
                                        return message
                                    },
                                    leaveAtOnce: { parts.leaveAtOnce() })
        signals.ignored = { [renderer] signal, reason in renderer.signalIgnored(signal, reason: reason) }
        defer { signals.finished() }
        ProcessSignals.shared.install(console: console)
        // --replay without -o: no file; the recorder's URL (/dev/null) is never opened.
        var url = URL(fileURLWithPath: "/dev/null")
        var reserved = false
        var replay: ReplaySaver?
        do {
            if options.writesFile {
                (url, reserved) = try resolveOutput()
                parts.set(output: url, reserved: reserved)
            }
            // Before the sources open: a bad name, folder or disk fails at once.
            if options.writesFile {
                try RecordingFile(url: url).preflight(overwrite: options.overwrite, pauseMode: options.pauseMode,
                                                      clipsFolder: options.keepClips,
                                                      minimumFreeSpace: options.minimumFreeSpace > 0 ? options.minimumFreeSpace : nil)
                RecordingParts.tidyLeftovers(beside: url, console: console)
            }
            replay = try makeReplaySaver(output: options.writesFile ? url : nil, renderer: renderer)
        } catch let error as ReelError {
            return fail(error)
        } catch {
            return fail(ReelError(.ioFailure, "\(error)"))
        }
        if let replay {
            parts.set(replay: replay)
            let buffer = replay.buffer
            renderer.replayHolding = { let held = buffer.statistics; return (held.bytes, held.videoDuration) }
        }
        // A dated name reel reserved is an empty file of its own: gone again if nothing is recorded.
        defer { if reserved { Recorder.releaseReservation(url) } }

        let session = options.virtualClock ? CaptureSession(clock: ManualClock(mode: .lockstep)) : CaptureSession()
        parts.set(url: options.writesFile ? url : nil, session: session)
        let sources: [any CaptureSource]
        noteEvenSize()
        do {
            sources = try makeSources(isCancelled: { signals.stopCameWhileStarting })
            for source in sources { try session.addInput(source) }
            options.applySound(to: sources, in: session)
            // Said with --json too: what is typed ends up in the file.
            if let note = try options.applyPresenter(to: sources, in: session) { console.err("reel: note: \(note)") }
        } catch let error as ReelError {
            return fail(error)
        } catch {
            return fail(ReelError(.invalidConfiguration, "\(error)"))
        }
        let videoSources = sources.filter { $0.kind == .video }
        var settings = Recorder.Settings(container: options.container, video: options.video, audio: options.audio,
                                         mixesAudio: options.mixesAudio, overwrite: options.overwrite)
        settings.maxRecordedDuration = options.limit
        settings.adaptsEncoderSpeed = options.adaptsEncoderSpeed
        settings.pauseMode = options.pauseMode
        settings.maxFileSize = options.maxFileSize
        settings.minimumFreeSpace = options.minimumFreeSpace > 0 ? options.minimumFreeSpace : nil
        settings.writeBufferSize = options.writeBufferSize
        if let folder = options.keepClips {
            settings.clipsFolder = folder
            settings.keepsClips = true
        }
        let recorder: Recorder
        let streams: [LiveStream]
        do {
            streams = try options.makeLiveStreams()
            if let hls = options.hls { try FileManager.default.createDirectory(at: hls.folder, withIntermediateDirectories: true) }
        } catch let error as ReelError {
            return fail(error)
        } catch {
            // Foundation's error wraps the system's reason (a file in the way, no permission).
            let reason = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError).map { Syscall.describe(Int32($0.code)) }
                ?? (error as NSError).localizedDescription
            let folder = options.hls?.folder.path ?? "the --hls folder"
            return fail(ReelError(.ioFailure, "cannot create the --hls folder \(folder): \(reason)", hint: "check the path and its permissions"))
        }
        if let replay {
            recorder = options.writesFile ? Recorder(url: url, settings: settings, replayBuffer: replay.buffer, sinks: streams)
                                          : Recorder(sinks: [replay.buffer as any PacketSink & Sendable] + streams.map { $0 }, settings: settings)
        } else {
            recorder = Recorder(url: url, settings: settings, sinks: streams)
        }
        parts.set(recorder: recorder)
        renderer.isStopping = { [recorder] in recorder.hasTakenItsLastSample }
        var compositor: Compositor?
        var preview: PreviewWindow?
        if let mode = options.preview, !videoSources.isEmpty {
            if let problem = PreviewWindow.unavailability() {
                guard mode == .auto else { return fail(problem) }
                if !options.json { console.err("reel: note: no display, so no preview window (\(problem.message))") }
            } else {
                preview = PreviewWindow(settings: .init(title: "Reel — \(options.writesFile ? url.lastPathComponent : "recording")",
                                                        showsRecordButton: options.startsPaused, showsStatus: true))
            }
        }
        var ownRecorders: [(String, Recorder)] = []
        var frameLog: FrameLog?
        var control: RecordControl?
        defer { control?.close() }
        do {
            if videoSources.count > 1 {
                let composer = Compositor(settings: .init(size: options.size, frameRate: options.frameRate, layout: options.layout))
                try composer.addOutput(recorder)
                try session.addOutput(composer)
                compositor = composer
                parts.set(compositor: composer)
            } else {
                try session.addOutput(recorder)
            }
            for (target, filter) in options.filters {
                if let target {
                    try session.setVideoFilter(filter, for: videoSources[target - 1])
                } else if let compositor {
                    try compositor.setVideoFilter(filter)
                } else if let only = videoSources.first {
                    try session.setVideoFilter(filter, for: only)
                }
            }
            if let window = preview {
                if let compositor { try compositor.addOutput(window) } else { try session.addOutput(window) }
            }
            if let folder = options.eachSource {
                ownRecorders = try addOwnRecorders(for: videoSources, in: folder, to: session, settings: settings, following: recorder)
            }
            if let log = options.frameLog, !videoSources.isEmpty {
                do {
                    if OutputLocation.looksLikeVideo(log) {
                        // --overwrite is for the recording; a typo must not turn a video into a log.
                        throw ReelError(.fileExists, "\(log.path) is a video file, not a frame log")
                    }
                    try RecordingFile.checkPlace(for: log, overwrite: options.overwrite)
                } catch var error as ReelError {
                    error.hint = Self.frameLogHint(for: error)
                    throw error
                }
                let logOutput = FrameLog(url: log, overwrite: options.overwrite, recorder: recorder)
                try session.addOutput(logOutput, connectedTo: videoSources)
                frameLog = logOutput
            }
            if options.schedule.start != nil {
                let schedule = options.schedule
                renderer.waitingUntilStart = { schedule.secondsToStart(at: recorder.sessionTime) }
                // SIGUSR1 before the start pauses nothing, as space does not: the wait is no pause.
                signals.waiting = { [renderer] in renderer.waitingUntilStart?().map(RecordKeyActions.notYet) }
            }
            if let choice = options.control {
                control = try RecordControl(path: try choice ?? RecordControl.defaultPath(), parts: parts, signals: signals, renderer: renderer,
                                            sourceNames: sources.map(\.name), videoSources: videoSources, file: options.writesFile ? url : nil)
                parts.set(closingControl: { [control] in control?.close() })
            }
            // `reel preview`: nothing is recorded until `r`; the first clip starts then.
            if options.startsPaused { recorder.pause(at: .zero) }
            options.schedule.apply(to: recorder)
            try await session.start()
        } catch let error as ReelError {
            return fail(error)
        } catch {
            return fail(ReelError(.sourceUnavailable, "\(error)"))
        }

        // What was picked by hand (a window is clicked as the session starts), before `started`.
        PickedSelection.say(sources, options: options, console: console, json: options.json)
        // Once recording has started, so that a failure to start is reported alone.
        for case let camera as V4L2CameraSource in sources {
            if let warning = camera.negotiation?.warning, !options.json { console.err("reel: note: \(camera.name): \(warning)") }
        }
        if !options.json && recorder.isRecording && options.writesFile {
            let cutOff = Recovery.cutOffRecordings(in: url.deletingLastPathComponent()).filter { $0.path != url.path }
            let unmerged = RecordingSession.unmergedRecordings(in: url.deletingLastPathComponent())
                .filter { $0.path != recorder.clipsFolder?.path && !Self.isBeingRecorded($0) }
            for note in Self.leftoverNotes(cutOff: cutOff, unmerged: unmerged) { console.err("reel: note: \(note)") }
        }
        signals.started()
        // `f` steps the recorded picture through the looks: none, mono, comic, crystal, none…
        // on top of the user's own --filter graph for that picture, which never goes.
        let picture = videoSources.first
        let own = options.filters.last { $0.source == nil || (compositor == nil && $0.source == 1) }?.filter
        let actions = RecordKeyActions(recorder: recorder, session: session, compositor: compositor, picture: picture, ownFilter: own,
                                       renderer: renderer, waitingUntilStart: renderer.waitingUntilStart)
        // Before the first recorded frame of `reel preview`, and before a scheduled start, the
        // window says idle, not paused.
        let firstState: PreviewWindow.RecordingState = options.startsPaused || options.schedule.start != nil ? .idle : .recording
        if let preview {
            actions.attach(to: preview, cameras: videoSources.compactMap { $0 as? any CameraSource }, compositor: compositor,
                           saveReplay: saveReplay) { signals.requestStop() }
            preview.show(.init(state: firstState, elapsed: .zero, maxDuration: options.maxDuration))
        }
        // With --json the keys still work when typed on a terminal (its output is for programs;
        // KeyControls reads keys only from a terminal on standard input).
        let keys = KeyControls(recorder: recorder, compositor: compositor, console: console,
                               interactive: options.json || console.isTerminal,
                               saveReplay: saveReplay, actions: actions) {
            signals.requestStop()
        }
        renderer.controlsHint = keys.isInteractive
        renderer.swapHint = keys.isInteractive && compositor != nil
        renderer.filterHint = keys.isInteractive && picture != nil
        renderer.sourcesLeft = sources.count
        let controlSocket = control
        // The countdown on the terminal's line and over the preview's picture.
        let window = preview
        let countdown = options.schedule.countdown(recorder, tick: { left in
            renderer.showCountdown(left)
            window?.message = RecordSchedule.countdownText(left)
        }, done: { window?.message = nil })
        let scheduledStop = options.schedule.watchStop(recorder) { signals.requestStop() }
        defer { scheduledStop?.cancel() }
        let events = Task {
            var state = firstState
            var last: RecordingProgress?
            for await event in recorder.events {
                if case .resumed = event { countdown?.cancel() }
                renderer.render(event)
                controlSocket?.note(event)
                guard let preview else { continue }
                switch event {
                case .progress(let p): last = p
                case .paused: state = state == .idle ? .idle : .paused
                case .resumed, .clipStarted: state = .recording
                default: continue
                }
                preview.show(.init(state: state, elapsed: last?.duration ?? .zero, bytes: last?.bytes ?? 0,
                                   droppedFrames: last?.droppedFrames ?? 0, maxDuration: last?.maxDuration ?? options.maxDuration))
            }
        }
        let sessionEvents = Task {
            for await event in session.events { renderer.render(event) }
        }
        // What became of the composed picture's filter.
        let compositorEvents = compositor.map { compositor in
            Task { for await event in compositor.events { renderer.render(event) } }
        }
        let outcome: Result<RecordingSummary, ReelError>
        do {
            outcome = .success(try await recorder.result())
        } catch let error as ReelError {
            outcome = .failure(error)
        } catch {
            outcome = .failure(ReelError(.encodingFailed, "\(error)"))
        }
        // An abort that came as the stop finalised says what became of the file, and ends reel.
        signals.holdWhileAborting()
        signals.stopping()
        await session.stop()
        // The buffer has everything up to the stop (or up to a failure of the -o file, whose
        // disk may not be the replays'): saved once more if asked, else dropped.
        var exitSave: Bool?
        if let replay {
            if options.replaySavesOnExit && replay.buffer.holdsPackets {
                renderer.finishLine()
                exitSave = await replay.saveNow()
            }
            await replay.waitForSaves()
        }
        let ownFiles = await OwnFile.results(of: ownRecorders)
        // --each-source: what each source's own file holds, in `finished` too (the text
        // summary says it; with --json only the sourceFile events after `finished` did).
        let ownSummaries = ownFiles.map(\.json)
        // A frame log that could not be written whole is in `finished` too (it was said on
        // stderr alone: issue 26, F9); the recording itself is not affected.
        let frameLogFailure = frameLog?.error.flatMap { error in options.frameLog.map { ["file": $0.path, "error": error.description] } }
        renderer.releaseFinished(failedSaves: replay.map { exitSave == false || $0.failed > 0 ? max($0.failed, 1) : 0 } ?? 0,
                                 madeGoodSaves: replay.map { $0.failedAtAll - $0.failed } ?? 0, sources: ownSummaries,
                                 frameLogFailure: frameLogFailure)
        if let error = frameLog?.error {
            console.err("reel: warning: the frame log is incomplete: \(error.description) (the recording is not affected)")
        }
        keys.cancel()
        // A recorder whose start was given up never runs, and its events never end.
        if case .failure(let error) = outcome, error.code == .notRunning { events.cancel() }
        await events.value
        sessionEvents.cancel()
        compositorEvents?.cancel()
        renderer.finishLine()
        switch outcome {
        case .success(let summary):
            // A GIF the full disk left no room for: where the recording is, and how to make it.
            if let notMade = summary.gifNotMade { console.err("reel: warning: \(Format.oneLine("\(CommandLineHints.rephrased(notMade))"))") }
            if !options.json && !options.writesFile, let replay {
                let saved = replay.saved
                let count = saved == 0 ? "no replay" : "\(saved) replay\(saved == 1 ? "" : "s")"
                // After a save at the stop the buffer was not dropped: it is in the last file.
                console.out(exitSave == true ? "\(count) saved in \(Format.path(replay.folder))"
                                             : "Replay buffer dropped; \(count) saved\(saved == 0 ? "" : " in \(Format.path(replay.folder))")")
                // The frames the recording lost (a loaded machine): the saves lack them too. They
                // were said only past a warning's threshold (with --json, in `finished`).
                for line in FrameDropWords.summaryLines(summary.frameDrops) { console.out(line) }
            } else if !options.json {
                renderer.printSummary(summary)
                if let compositor {
                    // Each composed source's own losses while recording (the composed picture
                    // showed its frame before there).
                    let names = compositor.sourceNames
                    for (id, drops) in summary.frameDropsBySource.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                        guard let name = names[id], drops.total > 0 else { continue }
                        console.out("  \(name): " + FrameDropWords.sourceLine(drops))
                    }
                }
            }
            if let preview {
                if let loss = preview.loss, !options.json {
                    let what = switch loss {
                    case .displayGone: "the preview window's display went away"
                    case .connectionClosed: "another program closed the preview window's connection to its display"
                    case .windowDestroyed: "another program closed the preview window"
                    }
                    console.err("reel: note: \(what), so the recording was stopped and finalised")
                }
                let delay = preview.displayDelay
                if options.json {
                    console.out(ProgressRenderer.json(["event": "preview", "shown": preview.picturesShown, "skipped": preview.picturesSkipped,
                                                       "clockOrigin": preview.clockOrigin.seconds,
                                                       "delayMean": (delay.mean * 1000).rounded() / 1000, "delayMax": (delay.maximum * 1000).rounded() / 1000]))
                } else {
                    console.out(String(format: "  preview   %lld pictures shown, capture to screen %.0f ms on average, %.0f ms at most",
                                       preview.picturesShown, delay.mean * 1000, delay.maximum * 1000))
                }
            }
            for file in ownFiles {
                let name = file.name
                switch file.result {
                case .success(let own):
                    if options.json {
                        var object = file.json
                        object["event"] = "sourceFile"
                        if let relocation = own.relocation { object["relocation"] = ProgressRenderer.json(relocation) }
                        if own.frameDrops.total > 0 { object["droppedBy"] = FrameDropWords.counts(own.frameDrops) }
                        console.out(ProgressRenderer.json(object))
                    } else {
                        // Incomplete is said here too, as on the main file's summary (the
                        // warning on stderr alone left the summary looking whole).
                        console.out("  \(name): \(Format.path(own.url)), \(own.frames) frames, \(own.droppedFrames) dropped"
                                    + FrameDropWords.why(own.frameDrops)
                                    + (ProgressRenderer.note(own.relocation).map { " (\($0))" } ?? "")
                                    + (file.isWhole ? "" : ", incomplete (exit status \(ExitStatus.incomplete))"))
                    }
                case .failure:
                    if options.json { console.out(ProgressRenderer.json(file.json.merging(["event": "sourceFile"]) { $1 })) }
                    else { console.out("  \(name): \(Format.path(file.url)), failed (exit status \(ExitStatus.incomplete)): see the warning") }
                }
                if let warning = file.warning { console.err(warning) }
            }
            // The main file's summary says "incomplete" for its own shortfalls; a source's own
            // file that ended early or failed makes the run incomplete too (exit 3), said here.
            if !options.json, summary.isWhole, !ownFiles.allSatisfy(\.isWhole) {
                console.out("  incomplete: a source's own file (--each-source) ended early or failed (exit status \(ExitStatus.incomplete))")
            }
            if let log = options.frameLog, !options.json { console.out("  frame log \(Format.path(log))") }
            // A moment asked for (with r, SIGUSR1 or --replay-save-on-exit) and not saved is a failure.
            // A save that failed (a full disk) and was asked again once there was room, holding
            // all the failed one would have: nothing asked for is lost (issue 26, F3: exit 1).
            if let replay, !options.json, case let madeGood = replay.failedAtAll - replay.failed, madeGood > 0 {
                console.err("reel: note: \(madeGood == 1 ? "the replay save that failed was" : "\(madeGood) replay saves that failed were") made good: a later save holds all of \(madeGood == 1 ? "its" : "their") moment")
            }
            if let replay, exitSave == false || replay.failed > 0 {
                let failed = max(replay.failed, 1)
                console.err("reel: error: \(failed == 1 ? "a replay" : "\(failed) replays") asked for could not be saved (the warnings above say why)")
                return ExitStatus.failure
            }
            // Finalised, but without all that was asked for (a source's part, the time a nearly
            // full disk cut off, a stream that stopped early): a script can tell (exit 3).
            // So is a source's own file that ended early or failed (--each-source).
            return summary.isWhole && ownFiles.allSatisfy(\.isWhole) ? ExitStatus.done : ExitStatus.incomplete
        case .failure(let error) where error.code == .nothingRecorded && options.startsPaused:
            // `reel preview` closed without pressing record: what was asked for, not a failure.
            if options.json { console.out(ProgressRenderer.json(["event": "finished", "status": "nothingRecorded"])) }
            else { console.out("Nothing was recorded (r starts recording); no file was written") }
            return 0
        case .failure(let error) where error.code == .nothingRecorded && signals.stopWasRequested && options.schedule.start != nil:
            // Stopped before the scheduled start: there is no file, so not a success (a script
            // that goes on to use the file must not), as any stop before the first frame.
            countdown?.cancel()
            renderer.clearForPrint()
            return fail(ReelError(.nothingRecorded, "stopped before the recording began (it was still waiting for its scheduled start); no file was written"))
        case .failure(let error) where error.code == .nothingRecorded && signals.stopWasRequested:
            return fail(ReelError(.nothingRecorded, "stopped before the first frame or sound was recorded; no file was written"))
        case .failure(let error) where error.code == .notRunning && signals.stopWasRequested:
            // The stop came while the sources were still opening: the start was given up.
            return fail(ReelError(.nothingRecorded, "stopped before the recording started; no file was written"))
        case .failure(let error):
            return fail(error)
        }
    }
}
