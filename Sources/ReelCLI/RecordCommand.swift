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

    static let previewHelp = """
    Usage: reel preview [SOURCES] [OPTIONS] [-o FILE]

    Opens a window showing the sources (composed as reel record composes them, filters
    applied) without recording. In the window, r or a click on the record button starts
    recording and pauses it again; each part becomes a clip (in NAME.clips/ beside the file,
    or --keep-clips DIR). Enter, q or closing the window stops: the clips are merged into the
    file. Nothing recorded, no file. Space also pauses and resumes, s swaps the composed
    pictures, f steps through the looks, z and Z zoom the cameras in and out. Needs a display.

    Examples:
      reel preview --camera --mic -o take.mp4
      reel preview --camera=test:blue --filter comic --max-duration 30

    """

    static let help = """
    Usage: reel record [SOURCES] [OPTIONS] [-o FILE]

    Records a screen, cameras, the built-in test camera, a microphone, application audio or
    the test tone into an MP4, MOV or MKV file. Several video sources are composed into one
    picture (picture-in-picture, side by side or a grid); --each-source also keeps each on
    its own. With no source given it records the screen of the session (Wayland or X11
    $DISPLAY), as --screen does, and says so. Stop with Ctrl-C (or SIGTERM): the file is
    finalised.
    A second Ctrl-C aborts at once; the file then keeps everything up to its last fragment.
    On a terminal, space pauses and resumes, s swaps the composed pictures and q or Enter
    stops; otherwise SIGUSR1 toggles pause and SIGUSR2 swaps. Pausing takes the gap out of the file, or with --pause-mode clips ends a clip;
    the clips (in NAME.clips/ beside the file, or --keep-clips DIR) are merged into the file
    when recording stops; if it is cut off, reel recover NAME.clips merges them.

    Replay buffer: --replay 30 keeps the last 30 s of encoded video and sound in memory and
    writes nothing until asked: r (on a terminal) or SIGUSR1 (off one; with --replay it saves
    rather than pauses; to pause off a terminal, record with --control and run reel control
    pause) saves them to a dated file in your videos folder (or --replay-dir DIR)
    and prints where (--json: a "saved" event). A save holds at least the last 30 s and at
    most one keyframe interval more, because it must start on a keyframe; the keyframe
    interval is 2 s unless --keyframe-interval says otherwise, which keeps that overshoot and
    the memory beyond 30 s small. Ctrl-C drops the buffer without asking (--replay-save-on-exit
    saves it once more first). With -o FILE the whole session is recorded as well, from the
    same encode. Paused time is not in the buffer. --replay-max-size 500M bounds its memory:
    past it the oldest seconds go; --replay-spill keeps it on the replay folder's disk instead.
    With --pause-mode clips the buffer, --stream and --hls take the same encode as the clips.

    Live streaming: --stream URL sends the recording live, from the same encode as the file,
    to an RTMP server (rtmp://HOST/APP/KEY or rtmps://; H.264 and AAC) or over SRT
    (srt://HOST:PORT). Repeat it for several. The key is never printed or put in JSON;
    --stream-key-file FILE keeps it off the command line too (for SRT the file holds the
    stream ID alone, or the lines streamid=ID and passphrase=SECRET). A slow link drops whole
    groups of pictures from the stream only (the file keeps every frame); when the server goes away
    the recording goes on and the stream reconnects, resuming on a keyframe. --hls DIR writes
    HLS into DIR (index.m3u8 and 2 s segments: the last 6 listed, older ones deleted;
    --hls-window 0 keeps the whole event; --hls-segments fmp4 for fragmented MP4 segments).
    FFmpeg's HLS writer keeps the segment it is making in memory until it ends (2 s, or past a
    pause: at the resume), so a killed recording's HLS lacks that segment; the file has it.

    One application's sound: --app-audio=APP records only what APP plays (its name, program or
    pid, as reel devices lists them; repeatable), --app-audio-except=APP everything but it; you
    still hear everything. On PipeWire (pipewire-pulse) the application is linked into a sink of
    reel's own: nothing is moved or lost at the start, and nothing is left to restore. On
    PulseAudio the chosen streams are moved through a relay onto the sink they played on, and
    put back when the recording ends, fails or is killed (a guard process restores them even
    after kill -9; the next reel run or reel doctor does if the guard died too). reel doctor
    --app-audio=APP says which way this machine gets. Any number of recordings may record one
    application at once; streams that start later are followed, and an application not playing
    yet is recorded when it starts (one that never plays makes the exit status 3).
    --app-audio=SINK, naming a sink, records that sink as before. With --window (X11) and
    --app-audio naming no application, only the window's application's sound is recorded: the
    process the window names (_NET_WM_PID) and the processes it started.

    Sound only: with only --mic, --app-audio or --tone, -o may name a .m4a (AAC), .opus or
    .ogg (Opus), .flac or .wav (16-bit PCM) file, in that file's own codec, with the same
    pause, clips and limits. A video source, --replay, --stream and --hls need a video file.
    A killed one is made whole by reel recover (M4A as MP4; WAV sizes, FLAC STREAMINFO, Ogg's
    last page).

    One window (X11): --window records the focused window, --window=ID (as reel devices or
    xwininfo show it), --window=NAME (in its title or class) or --window=pick (click it), of
    --screen's display. Its own picture is recorded, whatever covers it or wherever it moves,
    at its size when the recording starts; a resize is scaled in (--window-size fit or fill),
    a minimised window's last picture is held, a closed one ends the video like a lost screen.
    On Wayland --window asks the desktop portal, whose dialog chooses the window.

    Exit status: 0 when the file holds all that was asked for; 3 when it was finalised but a
    source was lost or interrupted, recorded nothing (an application that never played) or
    missed part of what it was asked for (the summary's "missing" lines, and with --json the
    source events and "complete": false with "shortfalls" in "finished", say which), or when
    --min-free stopped it early (a nearly full disk: "ending": "lowDiskSpace"), or a --stream
    or --hls output stopped early (its "failed" in "streams"); 1 for a failure, 2 for a usage
    error; 130 when aborted (a second Ctrl-C, reel control abort: the file is left as it is,
    and the message says where and how to finish it). Dropped frames do not change it: the
    summary and --json's "dropped" say them.

    Examples:
      reel record --screen --mic --app-audio
      reel record --window=firefox --app-audio -o tab.mp4          # the window and only its application's sound
      reel record --screen --camera --mic
      reel record --camera=rtsp://10.0.0.5/stream --camera=/dev/video0 --layout grid \\
                  --each-source cams/ --frame-log frames.csv -o both.mp4
      reel record --screen=:1 --region 1280x720+0+0 --fps 60 -o demo.mp4
      reel record --test-pattern --tone --duration 5 -o test.mp4
      reel record --mic -o talk.m4a                                # sound only: .m4a, .opus, .ogg, .flac, .wav
      reel record --screen --app-audio=firefox --mic               # Firefox's sound only, and the microphone
      reel record --app-audio-except=Zoom -o no-call.m4a           # every application's sound but the call's
      reel record --screen --app-audio --replay 30                 # r or SIGUSR1 saves the last 30 s
      reel record --screen --mic --replay 2m -o whole-session.mp4
      reel record --screen --mic -o talk.mp4 --stream rtmp://live.example/app --stream-key-file key.txt
      reel record --screen --mic --hls /var/www/live --hls-window 0   # HLS of the whole event, beside the file

    """

    /// Runs the recording; returns the exit status.
    func run() async -> Int32 {
        // The signals are answered from the first moment: a stop while the session starts stops
        // it once started, and USR1/USR2 with nothing to do yet are ignored with a note.
        let parts = RecordingParts()
        let renderer = ProgressRenderer(console: console, json: options.json)
        renderer.replay = options.replay
        renderer.writesFile = options.writesFile
        renderer.pauseMakesClips = options.pauseMode == .clips
        renderer.holdsFinished = options.json && options.replay != nil
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
                                            console.out(ProgressRenderer.json(["event": "aborted", "message": message.replacingOccurrences(of: "reel: ", with: "")]))
                                        }
                                        return message
                                    })
        signals.ignored = { [renderer] signal, reason in renderer.signalIgnored(signal, reason: reason) }
        defer { signals.finished() }
        ProcessSignals.shared.install(console: console)
        // --replay without -o: no file; the recorder's URL (/dev/null) is never opened.
        var url = URL(fileURLWithPath: "/dev/null")
        var reserved = false
        var replay: ReplaySaver?
        do {
            if options.writesFile { (url, reserved) = try resolveOutput() }
            // Before the sources open: a bad name, folder or disk fails at once.
            if options.writesFile {
                try RecordingFile(url: url).preflight(overwrite: options.overwrite || reserved, pauseMode: options.pauseMode,
                                                      clipsFolder: options.keepClips,
                                                      minimumFreeSpace: options.minimumFreeSpace > 0 ? options.minimumFreeSpace : nil)
                RecordingParts.tidyLeftovers(beside: url, console: console)
            }
            renderer.requestedFile = options.writesFile ? url : nil
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
        defer { if reserved { OutputLocation.releaseReservation(url) } }

        let session = options.virtualClock ? CaptureSession(clock: ManualClock()) : CaptureSession()
        parts.set(url: options.writesFile ? url : nil, session: session)
        let sources: [any CaptureSource]
        do {
            sources = try makeSources()
            for source in sources { try session.addInput(source) }
            options.applySound(to: sources, in: session)
        } catch let error as ReelError {
            return fail(error)
        } catch {
            return fail(ReelError(.invalidConfiguration, "\(error)"))
        }
        let videoSources = sources.filter { $0.kind == .video }
        var settings = Recorder.Settings(container: options.container, video: options.video, audio: options.audio,
                                         mixesAudio: options.mixesAudio, overwrite: options.overwrite || reserved)
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
        var compositor: Compositor?
        var preview: PreviewWindow?
        if let mode = options.preview, !videoSources.isEmpty {
            if let problem = PreviewWindow.canOpen() {
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
                    compositor.setVideoFilter(filter)
                } else if let only = videoSources.first {
                    try session.setVideoFilter(filter, for: only)
                }
            }
            if let window = preview {
                if let compositor { try compositor.addOutput(window) } else { try session.addOutput(window) }
            }
            if let folder = options.eachSource {
                ownRecorders = try addOwnRecorders(for: videoSources, in: folder, to: session, settings: settings)
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
            if let choice = options.control {
                control = try RecordControl(path: try choice ?? RecordControl.defaultPath(), parts: parts, signals: signals, renderer: renderer,
                                            sourceNames: sources.map(\.name), videoSources: videoSources, file: options.writesFile ? url : nil)
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
        // In clip mode the file appears only with the merge at the stop; the clips folder, made
        // now, holds the name meanwhile (a crash leaves it, not an empty file beside it).
        if reserved && options.pauseMode == .clips { OutputLocation.releaseReservation(url) }
        // `f` steps the recorded picture through the looks: none, mono, comic, crystal, none…
        let picture = videoSources.first
        var cycleFilter: (@Sendable () -> Void)?
        if let picture {
            let composer = compositor
            // The user's own --filter for that picture comes round again in the cycle.
            let own = options.filters.last { $0.source == nil || (composer == nil && $0.source == 1) }?.filter
            cycleFilter = {
                let next = KeyControls.look(after: composer?.videoFilter ?? session.videoFilter(for: picture), own: own)
                if let composer { composer.setVideoFilter(next) } else { try? session.setVideoFilter(next, for: picture) }
                renderer.note("filter: \(next?.description ?? "none")")
            }
        }
        if let preview {
            let cameras = videoSources.compactMap { $0 as? any CameraSource }
            let composer = compositor, cycle = cycleFilter
            preview.onKey = { key in
                switch key {
                case .pause: try? recorder.togglePause()
                case .record: if let saveReplay { saveReplay() } else { try? recorder.togglePause() }
                case .stop: signals.requestStop()
                case .swap: composer?.swap()
                case .filter: cycle?()
                case .marker: try? recorder.addMarker()
                case .zoomIn, .zoomOut:
                    for camera in cameras {
                        let factor = camera.videoZoomFactor * (key == .zoomIn ? 2.0.squareRoot() : 1 / 2.0.squareRoot())
                        camera.ramp(toVideoZoomFactor: min(ZoomControl.maximumFactor, max(1, factor)), withRate: 2)
                    }
                }
            }
            preview.show(.init(state: options.startsPaused ? .idle : .recording, elapsed: .zero, maxDuration: options.maxDuration))
        }
        // With --json the keys still work when typed on a terminal (its output is for programs;
        // KeyControls reads keys only from a terminal on standard input).
        let keys = KeyControls(recorder: recorder, compositor: compositor, console: console,
                               interactive: options.json || console.isTerminal,
                               saveReplay: saveReplay, cycleFilter: cycleFilter) {
            signals.requestStop()
        }
        renderer.controlsHint = keys.isInteractive
        renderer.swapHint = keys.isInteractive && compositor != nil
        renderer.filterHint = keys.isInteractive && picture != nil
        renderer.sourcesLeft = sources.count
        let controlSocket = control
        let countdown = options.json ? nil : options.schedule.countdown(console: console, recorder: recorder)
        let scheduledStop = options.schedule.watchStop(recorder) { signals.requestStop() }
        defer { scheduledStop?.cancel() }
        let events = Task {
            // Before the first recorded frame of `reel preview` the window says idle, not paused.
            var state: PreviewWindow.RecordingState = options.startsPaused ? .idle : .recording
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
        let outcome: Result<RecordingSummary, ReelError>
        do {
            outcome = .success(try await recorder.result())
        } catch let error as ReelError {
            outcome = .failure(error)
        } catch {
            outcome = .failure(ReelError(.encodingFailed, "\(error)"))
        }
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
        renderer.releaseFinished(failedSaves: replay.map { exitSave == false || $0.failed > 0 ? max($0.failed, 1) : 0 } ?? 0)
        if let error = frameLog?.error {
            console.err("reel: warning: the frame log is incomplete: \(error.description) (the recording is not affected)")
        }
        var ownFiles: [(String, Result<RecordingSummary, ReelError>)] = []
        for (name, own) in ownRecorders {
            do { ownFiles.append((name, .success(try await own.result()))) } catch {
                ownFiles.append((name, .failure(error as? ReelError ?? ReelError(.encodingFailed, "\(error)"))))
            }
        }
        keys.cancel()
        // A recorder whose start was given up never runs, and its events never end.
        if case .failure(let error) = outcome, error.code == .notRunning { events.cancel() }
        await events.value
        sessionEvents.cancel()
        renderer.finishLine()
        switch outcome {
        case .success(let summary):
            if !options.json && !options.writesFile, let replay {
                let saved = replay.saved
                let count = saved == 0 ? "no replay" : "\(saved) replay\(saved == 1 ? "" : "s")"
                // After a save at the stop the buffer was not dropped: it is in the last file.
                console.out(exitSave == true ? "\(count) saved in \(replay.folder.path)"
                                             : "Replay buffer dropped; \(count) saved\(saved == 0 ? "" : " in \(replay.folder.path)")")
            } else if !options.json {
                renderer.printSummary(summary)
                if let compositor {
                    let names = compositor.sourceNames
                    for (id, n) in compositor.droppedFramesBySource.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where n > 0 {
                        console.out("  \(names[id] ?? "source \(id)"): \(n) frames dropped")
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
            for (name, result) in ownFiles {
                switch result {
                case .success(let own):
                    if options.json {
                        console.out(ProgressRenderer.json(["event": "sourceFile", "source": name, "file": own.url.path,
                                                           "frames": own.frames, "dropped": own.droppedFrames]))
                    } else {
                        console.out("  \(name): \(own.url.path), \(own.frames) frames, \(own.droppedFrames) dropped")
                    }
                case .failure(let error):
                    console.err("reel: warning: the recording of \(name) on its own failed: \(error.description)")
                }
            }
            if let log = options.frameLog, !options.json { console.out("  frame log \(log.path)") }
            // A moment asked for (with r, SIGUSR1 or --replay-save-on-exit) and not saved is a failure.
            if let replay, exitSave == false || replay.failed > 0 {
                let failed = max(replay.failed, 1)
                console.err("reel: error: \(failed == 1 ? "a replay" : "\(failed) replays") asked for could not be saved (the warnings above say why)")
                return ExitStatus.failure
            }
            // Finalised, but without all that was asked for (a source's part, the time a nearly
            // full disk cut off, a stream that stopped early): a script can tell (exit 3).
            return summary.isWhole ? ExitStatus.done : ExitStatus.incomplete
        case .failure(let error) where error.code == .nothingRecorded && options.startsPaused:
            // `reel preview` closed without pressing record: what was asked for, not a failure.
            if options.json { console.out(ProgressRenderer.json(["event": "finished", "status": "nothingRecorded"])) }
            else { console.out("Nothing was recorded (r starts recording); no file was written") }
            return 0
        case .failure(let error) where error.code == .nothingRecorded && signals.stopWasRequested && options.schedule.start != nil:
            // Stopped before the scheduled start: what was asked for, not a failure.
            countdown?.cancel()
            if options.json { console.out(ProgressRenderer.json(["event": "finished", "status": "nothingRecorded"])) }
            else { console.err("\rStopped before the recording began; nothing was written") }
            return 0
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
