import Foundation
import Reel

/// Draws recording progress: a live line on a terminal, JSON lines with `--json`, nothing
/// otherwise; and the closing summary.
final class ProgressRenderer: @unchecked Sendable {
    let console: Console
    private let json: Bool
    private let lock = NSLock()
    private var lineShown = false
    /// Whether making the GIF at the stop has been said.
    private var convertingSaid = false
    /// The last quarter of a GIF's making said off a terminal.
    private var convertingQuarter = 0
    /// Whether the progress line says which keys control the recording.
    var controlsHint = false
    /// Whether the hint names the swap key (several pictures composed).
    var swapHint = false
    /// Whether the hint shows `f` (a picture to filter).
    var filterHint = false
    /// The sources not lost or ended, so that losing one says whether the recording goes on.
    var sourcesLeft = 0
    /// `--replay`: how much the replay buffer keeps (the line says so, and names the save key).
    var replay: MediaTime?
    /// `--size` as given and as recorded, when it was made even: in `started` too (`size`,
    /// `sizeAsGiven`), as the note on standard error says it (s44 #8f: said there only).
    var evenSize: (given: PixelSize, recorded: PixelSize)?
    /// `--replay`: what the buffer holds now (its bytes and the video time), for the line and
    /// the `progress` events (without a file, these are the only bytes there are).
    var replayHolding: (@Sendable () -> (bytes: Int64, video: MediaTime))?
    /// Whether a file is recorded (not with `--replay` alone: events then name no file).
    var writesFile = true
    /// Whether the recording is stopping (has taken its last sample): a stream that fails
    /// then is not left behind by a recording that goes on, it ended early.
    var isStopping: (@Sendable () -> Bool)?
    /// `--pause-mode clips`: a pause ends a clip, and the line counts clips. Otherwise a pause
    /// only takes a gap out of one file, and the summary counts pauses.
    var pauseMakesClips = false

    /// How a recording's parts are counted for programs (`--json`'s `progress`, `reel control
    /// status`): `clips` in clip mode (the one being recorded included), `pauses` in one file,
    /// which has no clips.
    static func parts(_ intervals: Int, pauseMakesClips: Bool) -> (key: String, count: Int) {
        pauseMakesClips ? ("clips", intervals) : ("pauses", max(0, intervals - 1))
    }
    /// `--delay`/`--start-at`: the seconds left before recording begins (`nil` once it has, or
    /// without a schedule). While waiting, the line counts down and events say `waiting`,
    /// not `paused`; the start is `begun`.
    var waitingUntilStart: (@Sendable () -> Double?)?
    /// Whether `waiting` was said and `begun` has not been yet.
    private var waitingSaid = false
    /// Where the last marker's chapter begins (a marker there again joined it).
    private var lastMarkerStart: MediaTime?
    /// `started`, held until something has been recorded (the first progress, which the
    /// recorder says at its first sample), so that `started` means recording has started: a
    /// stop before the first frame or sound, during a schedule's wait or while the sources
    /// open, never says it. With a schedule it is said when recording begins (just before `begun`).
    private var heldStarted: [String: Any]?

    /// Says the held `started` (see ``heldStarted``).
    private func releaseStarted() {
        guard let held = heldStarted else { return }
        heldStarted = nil
        emit(held)
    }
    /// `--json` with `--replay`, `--each-source` or `--frame-log`: the `finished` event is held
    /// until ``releaseFinished(failedSaves:madeGoodSaves:sources:frameLogFailure:)`` (after the saves still
    /// running at the stop, each source's own recording and the frame log), so that it is the
    /// last event and says whether every save asked for was made, what each source's own file
    /// holds, and a frame log that could not be written whole (`frameLogIncomplete`).
    var holdsFinished = false
    private var heldFinished: [String: Any]?
    private var finishedReleased = false
    /// The failed saves ``releaseFinished(failedSaves:)`` was told of: for a `finished` event
    /// that comes after it (the recorder's events arrive on their own task).
    private var releasedFailedSaves = 0
    /// The sources' own files ``releaseFinished(failedSaves:sources:)`` was told of (the same).
    private var releasedMadeGoodSaves = 0
    private var releasedSources: [[String: Any]] = []
    private var releasedFrameLogFailure: [String: String]?

    /// Prints the `finished` event held back (see ``holdsFinished``), or lets it through when
    /// it comes. `failedSaves` replay saves asked for were not made: the recording did not
    /// deliver all that was asked (`"complete": false`, `"replaySavesFailed"`). `madeGoodSaves`
    /// saves failed but a later save holds their moment (`"replaySavesMadeGood"`; complete).
    /// `sources`: each `--each-source` recording's file and frames (`"sources"`).
    func releaseFinished(failedSaves: Int = 0, madeGoodSaves: Int = 0, sources: [[String: Any]] = [], frameLogFailure: [String: String]? = nil) {
        lock.lock(); defer { lock.unlock() }
        finishedReleased = true
        releasedFailedSaves = failedSaves
        releasedMadeGoodSaves = madeGoodSaves
        releasedSources = sources
        releasedFrameLogFailure = frameLogFailure
        if var held = heldFinished {
            addReleased(to: &held)
            console.out(Self.json(held))
            heldFinished = nil
        }
    }

    /// Adds to a `finished` event what ``releaseFinished(failedSaves:madeGoodSaves:sources:frameLogFailure:)``
    /// was told: the failed saves, each source's own file, a frame log not written whole.
    private func addReleased(to object: inout [String: Any]) {
        if let failure = releasedFrameLogFailure { object["frameLogIncomplete"] = failure }
        if releasedFailedSaves > 0 {
            object["complete"] = false
            object["replaySavesFailed"] = releasedFailedSaves
        }
        if releasedMadeGoodSaves > 0 { object["replaySavesMadeGood"] = releasedMadeGoodSaves }
        if !releasedSources.isEmpty { object["sources"] = releasedSources }
        if Self.anyIncomplete(releasedSources) { object["complete"] = false }
    }

    /// Whether a source's own file (`--each-source`) ended early or failed: the recording did
    /// not deliver all that was asked (`"complete": false`, exit 3), as for the main file.
    static func anyIncomplete(_ sources: [[String: Any]]) -> Bool {
        sources.contains { $0["complete"] as? Bool == false }
    }

    /// Hears every event as the JSON line `--json` prints, with or without `--json` (the
    /// control socket's subscribers).
    var eventListener: (@Sendable (String) -> Void)?

    /// Hands `line`, an event printed elsewhere (a replay saved), to ``eventListener``.
    func forward(_ line: String) {
        lock.lock()
        let listener = eventListener
        lock.unlock()
        listener?(line)
    }

    /// A signal was ignored (`reason` says why): a `signalIgnored` event, for scripts.
    func signalIgnored(_ signal: String, reason: String) {
        emit(["event": "signalIgnored", "signal": signal, "reason": reason])
    }

    /// Prints `object` as a JSON line with `--json`, and hands it to ``eventListener``.
    private func emit(_ object: [String: Any]) {
        let line = Self.json(object)
        if json { console.out(line) }
        eventListener?(line)
    }

    init(console: Console, json: Bool) {
        self.console = console
        self.json = json
    }

    static func json(_ object: [String: Any]) -> String {
        JSONLine.encode(object) ?? "{}"
    }

    func render(_ event: RecordingEvent) {
        lock.lock(); defer { lock.unlock() }
        switch event {
        case .started(let url):
            var object: [String: Any] = ["event": "started"]
            if writesFile { object["file"] = url.path }
            if let replay { object["replay"] = rounded(replay.seconds) }
            if let evenSize { (object["size"], object["sizeAsGiven"]) = ("\(evenSize.recorded)", "\(evenSize.given)") }
            heldStarted = object
        case .progress(let p):
            let waiting = waitingUntilStart?()
            if waiting == nil && (p.duration > .zero || p.frames > 0) { releaseStarted() }
            if json || eventListener != nil {
                var object: [String: Any] = ["event": "progress", "duration": rounded(p.duration.seconds),
                                             "frames": p.frames, "dropped": p.droppedFrames, "paused": p.isPaused && waiting == nil,
                                             "droppedAudio": rounded(p.droppedAudio.seconds)]
                let parts = Self.parts(p.clipCount, pauseMakesClips: pauseMakesClips)
                object[parts.key] = parts.count
                if let waiting { object["startsIn"] = rounded(waiting) }
                if writesFile { object["bytes"] = p.bytes }
                if let max = p.maxDuration { object["maxDuration"] = rounded(max.seconds) }
                if let held = replayHolding?() {
                    object["replayBytes"] = held.bytes
                    object["replayDuration"] = rounded(held.video.seconds)
                }
                if !p.streams.isEmpty { object["streams"] = p.streams.map(StreamProgress.json) }
                emit(object)
            }
            if let waiting {
                showCountdownLocked(waiting)
            } else if !json && console.isTerminal {
                var line = (p.isPaused ? "❚❚ PAUSED " : writesFile ? "● REC " : "● REPLAY ") + Format.clock(seconds: p.duration.seconds)
                if let max = p.maxDuration { line += " / \(Format.clock(seconds: max.seconds))" }
                if writesFile { line += "  \(Format.bytes(p.bytes))" }
                line += "  \(p.frames) frames  \(p.droppedFrames) dropped"
                if let replay {
                    line += "  keeping the last \(Format.clock(seconds: replay.seconds))"
                    if let held = replayHolding?() { line += " (\(Format.bytes(held.bytes)) held)" }
                }
                if pauseMakesClips && p.clipCount > 1 { line += "  clip \(p.clipCount)" }
                line += StreamProgress.line(p.streams)
                if controlsHint {
                    line += "  [space] pause/resume" + (swapHint ? "  [s] swap" : "") + (filterHint ? "  [f] filter" : "") + (writesFile ? "  [m] marker" : "") + (replay != nil ? "  [r] save replay" : "") + "  [q] stop"
                }
                console.errRaw("\r\u{1B}[2K" + line)
                lineShown = true
            }
        case .sourceLost, .sourceInterrupted, .sourceResumed, .sourceSilent, .sourceIncomplete, .anotherRecordingEnded:
            break  // the session's own events report every source, once
        case .streamInterrupted(let name, let error):
            emit(["event": "streamInterrupted", "stream": name, "message": error.description])
            if !json { clearLine(); console.err("reel: warning: stream \(name) interrupted: \(error.description); recording goes on, reconnecting") }
        case .streamFailed(let name, let failure):
            let error = CommandLineHints.rephrased(failure)
            emit(["event": "streamFailed", "stream": name, "message": error.description])
            if !json {
                clearLine()
                if isStopping?() == true {
                    // At the stop no recording goes on: the stream is what it is, incomplete.
                    console.err("reel: warning: \(name) is incomplete: \(error.description)" + (writesFile ? " (the file is not affected)" : ""))
                } else {
                    console.err("reel: warning: \(name) stopped: \(error.description); the recording goes on without it")
                }
            }
        case .sinkDropped(let name, let error):
            // reel adds no sink of its own kind; said all the same, as a library user would be.
            var event: [String: Any] = ["event": "sinkDropped", "sink": name]
            if let error { event["message"] = error.description }
            emit(event)
            if !json { clearLine(); console.err("reel: warning: \(name) stopped taking the recording" + (error.map { ": \($0.description)" } ?? "") + "; the recording goes on without it") }
        case .streamResumed(let name):
            emit(["event": "streamResumed", "stream": name])
            if !json { clearLine(); console.err("reel: stream \(name) is back") }
        case .framesDropped(let notice):
            emit(FrameDropWords.json(notice))
            if !json { clearLine(); console.err(FrameDropWords.line(notice)) }
        case .audioMissed(let name, let duration):
            let hint = CommandLineHints.rephrased(hint: SourceEvent.missedAudioHint)
            emit(["event": "audioMissed", "source": name, "duration": rounded(duration.seconds),
                  "message": SourceEvent.missedAudioExplanation, "hint": hint])
            if !json {
                clearLine()
                console.err("reel: warning: \(name): \(SourceEvent.lengthWords(duration)) of sound missed: \(SourceEvent.missedAudioExplanation); \(hint) (the recording goes on, complete)")
            }
        case .encoderSpeedChanged(let change):
            emit(Self.json(change))
            if !json { clearLine(); console.err("reel: \(change)") }
        case .merging(let progress):
            // The clips merged at the stop: the same bar and events as reel merge's.
            emit(WorkProgressView.json(progress))
            if !json && console.isTerminal {
                console.errRaw("\r\u{1B}[2K" + WorkProgressView.line(progress, subject: "the clips"))
                lineShown = true
            }
        case .converting(let progress):
            // A GIF, made at the stop from its intermediate: said once, then the bar.
            if json { console.out(Self.json(WorkProgressView.json(progress))) }
            else {
                if !convertingSaid {
                    convertingSaid = true
                    clearLine()
                    console.err("reel: making the GIF from the recording (a palette fitted to it, then each picture dithered onto it)")
                }
                if console.isTerminal {
                    console.errRaw("\r\u{1B}[2K" + WorkProgressView.line(progress, subject: "the GIF"))
                    lineShown = true
                } else {
                    // Off a terminal (a log, a pipe), a line at each quarter: not a silence that looks hung.
                    let quarter = Int((progress.fractionCompleted * 4).rounded(.down))
                    if quarter > convertingQuarter, !progress.isFinished {
                        convertingQuarter = quarter
                        let left = progress.estimatedTimeRemaining.map { ", " + WorkProgressView.timeLeft($0.seconds) } ?? ""
                        console.err("reel: making the GIF: \(quarter * 25) %\(left)")
                    }
                }
            }
        case .finished(let s):
            releaseStarted()
            if json || eventListener != nil {
                var object: [String: Any] = ["event": "finished", "duration": rounded(s.duration.seconds),
                                             "frames": s.frames, "dropped": s.droppedFrames,
                                             "droppedAudio": rounded(s.droppedAudio.seconds)]
                if s.frameDrops.total > 0 { object["droppedBy"] = FrameDropWords.counts(s.frameDrops) }
                if writesFile {
                    object["file"] = s.url.path
                    if let relocation = s.relocation {
                        object["relocation"] = Self.json(relocation)
                        if case .savedElsewhere(let from) = relocation {
                            object[Self.folderIsGone(from) ? "folderDeleted" : "folderUnwritable"] = from.deletingLastPathComponent().path
                        }
                    }
                    object["bytes"] = s.bytes
                }
                if !s.streams.isEmpty { object["streams"] = s.streams.map(StreamProgress.json) }
                if !s.encoderSpeedChanges.isEmpty { object["encoderSpeedChanges"] = s.encoderSpeedChanges.map(Self.json) }
                object["ending"] = s.ending.rawValue
                object["complete"] = s.isWhole
                if !s.isComplete { object["shortfalls"] = s.shortfalls.map { Self.json($0) } }
                if !s.lostClips.isEmpty { object["lostClips"] = s.lostClips.map(\.path) }
                if !s.endedRecordings.isEmpty { object["endedRecordings"] = s.endedRecordings }
                if let notMade = s.gifNotMade.map(CommandLineHints.rephrased) {
                    object["gifNotMade"] = ["code": notMade.code.rawValue, "message": notMade.message, "hint": notMade.hint ?? ""]
                }
                if let notMerged = s.clipsNotMerged.map(CommandLineHints.rephrased) {
                    object["clipsNotMerged"] = ["code": notMerged.code.rawValue, "message": notMerged.message, "hint": notMerged.hint ?? ""]
                }
                // With a save at the stop to come, `finished` waits for it: it stays the last event.
                if holdsFinished && !finishedReleased {
                    eventListener?(Self.json(object))
                    if json { heldFinished = object }
                } else {
                    // Released before it came: it still says the saves that failed, the sources' files, the frame log.
                    if holdsFinished { addReleased(to: &object) }
                    emit(object)
                }
            }
        case .failed:
            break  // reported by the command
        case .paused(let recorded):
            if let waiting = waitingUntilStart?() {
                // The pause a schedule begins with is the wait.
                waitingSaid = true
                emit(["event": "waiting", "startsIn": rounded(waiting), "startsAt": Self.wallClock(in: waiting)])
            } else {
                emit(["event": "paused", "duration": rounded(recorded.seconds)])
            }
        case .resumed(let recorded):
            releaseStarted()
            if waitingSaid {
                waitingSaid = false
                emit(["event": "begun"])
            } else {
                emit(["event": "resumed", "duration": rounded(recorded.seconds)])
            }
        case .clipStarted(let index):
            // A clip begins with the recording's first frame, before its first progress: the
            // recording has started (s6 N10: clipStarted came before started).
            if waitingUntilStart?() == nil { releaseStarted() }
            if pauseMakesClips { emit(["event": "clipStarted", "clip": index + 1]) }
        case .markerAdded(let chapter):
            // A marker at the instant of the one before joins its chapter, and its event carries
            // that chapter (the same start, the titles joined): said, so that a reader counts one.
            let joined = lastMarkerStart == chapter.start
            lastMarkerStart = chapter.start
            var object: [String: Any] = ["event": "marker", "title": chapter.title, "time": rounded(chapter.start.seconds)]
            if joined { object["joined"] = true }
            emit(object)
            if !json {
                clearLine()
                console.err("reel: marker '\(Format.printable(chapter.title))' at \(Format.clock(seconds: chapter.start.seconds))"
                            + (joined ? " (joined with the marker before, at the same moment: one chapter)" : ""))
            }
        case .clipFinished(let clip):
            emit(["event": "clipFinished", "file": clip.url.path, "duration": rounded(clip.duration.seconds), "frames": clip.frameCount])
        case .clipsFolderChanged(.moved(let from, let to)):
            emit(["event": "clipsFolderMoved", "from": from.path, "to": to.path])
            if !json { clearLine(); console.err("reel: warning: the clips folder \(from.path) was moved to \(to.path) while recording; the recording follows it there") }
        case .clipsFolderChanged(.remade(let folder, let lost)):
            emit(["event": "clipsFolderDeleted", "folder": folder.path, "lostClips": lost.map(\.path)])
            if !json {
                clearLine()
                let what = lost.isEmpty ? "no finished clip was in it"
                    : "\(lost.count) finished clip\(lost.count == 1 ? "" : "s") in it \(lost.count == 1 ? "is" : "are") lost (\(lost.map(\.lastPathComponent).joined(separator: ", "))), and the merged file will lack \(lost.count == 1 ? "it" : "them")"
                console.err("reel: warning: the clips folder \(folder.path) was deleted while recording: \(what); it is made again and the recording goes on there (the clip being recorded is kept)")
            }
        }
    }

    func render(_ event: SessionEvent) {
        lock.lock(); defer { lock.unlock() }
        switch event {
        case .sourceEnded(let name):
            sourcesLeft = max(0, sourcesLeft - 1)
            emit(["event": "sourceEnded", "source": name])
            if !json { clearLine(); console.err("reel: \(name) ended") }
        case .sourceLost(let name, let error):
            sourcesLeft = max(0, sourcesLeft - 1)
            let then = sourcesLeft > 0 ? "recording goes on with the other sources" : "no source is left, so the recording ends with what it has"
            emit(["event": "sourceLost", "source": name, "message": error.description])
            if !json { clearLine(); console.err("reel: warning: lost \(name): \(error.description); \(then)") }
        case .sourceInterrupted(let name, let error):
            emit(["event": "sourceInterrupted", "source": name, "message": error.description])
            if !json { clearLine(); console.err("reel: warning: \(name) interrupted: \(error.description); recording goes on and picks it up when it is back") }
        case .sourceResumed(let name):
            emit(["event": "sourceResumed", "source": name])
            if !json { clearLine(); console.err("reel: \(name) is back") }
        case .sourceSilent(let name, let error):
            emit(["event": "sourceSilent", "source": name, "message": error.description])
            if !json { clearLine(); console.err("reel: \(name): \(error.description)") }
        case .sourceIncomplete(let name, let error):
            emit(["event": "sourceIncomplete", "source": name, "message": error.description])
            if !json { clearLine(); console.err("reel: warning: \(name): \(error.description)") }
        case .anotherRecordingEnded(let name, let message):
            emit(["event": "anotherRecordingEnded", "source": name, "message": message])
            if !json { clearLine(); console.err("reel: warning: \(name): \(message)") }
        case .filterFailed(let name, let filter, let error):
            emit(["event": "filterFailed", "source": name, "filter": filter, "message": error.description])
            // A filter that holds its first pictures back (they are black). One that cannot be
            // applied ends its source's pictures, said as the source lost; at the start it
            // fails the start.
            if !json { clearLine(); console.err("reel: warning: the filter '\(filter)' on \(name): \(error.description)") }
        case .filterResized(let name, let filter, let size, let recorded, let resizing):
            emit(["event": "filterResized", "source": name, "filter": filter, "size": size.description, "recorded": recorded.description,
                  "resizing": resizing.rawValue])
            if !json { clearLine(); console.err(Self.filterResizedText(source: name, filter: filter, size: size, recorded: recorded, resizing: resizing)) }
        case .keyCaptionsHidden(let name):
            emit(["event": "keyCaptionsHidden", "source": name])
            if !json { clearLine(); console.err("reel: key captions hidden on \(name) (Ctrl+Alt+K): what is typed is not drawn until Ctrl+Alt+K again") }
        case .keyCaptionsShown(let name):
            emit(["event": "keyCaptionsShown", "source": name])
            if !json { clearLine(); console.err("reel: key captions shown again on \(name): everything typed is drawn, passwords too") }
        case .droppedFrames, .missedAudio:
            break  // counted in progress; the recorder says them (framesDropped, audioMissed)
        }
    }

    /// What `reel record` says of a filter whose pictures are not recorded at the size it makes:
    /// the even part of an odd size, scaled or fitted (black bars) into --size, or fitted into
    /// the size the recording started with. `recorded` is the file's size.
    static func filterResizedText(source: String, filter: String, size: PixelSize, recorded: PixelSize,
                                  resizing: SessionEvent.FilterResizing) -> String {
        let even = PixelSize(width: max(2, size.width & ~1), height: max(2, size.height & ~1))
        switch resizing {
        case .scaled:
            return "reel: note: the filter '\(filter)' makes \(size) pictures of \(source); they are scaled to \(recorded) (--size), which has their shape"
        case .fitted:
            let narrower = size.width * recorded.height < recorded.width * size.height
            return "reel: warning: the filter '\(filter)' makes \(size) pictures of \(source), another shape than \(recorded) (--size): "
                + "they are recorded at \(recorded) with their aspect kept, black bars \(narrower ? "at the left and right" : "above and below"), not stretched; "
                + "to fill it, make the filter give that shape (a crop or pad to it), or leave out --size to record at \(even)"
        case .evenPart:
            let left = size.width != even.width && size.height != even.height ? "last column and row are" : size.width != even.width ? "last column is" : "last row is"
            return "reel: note: the filter '\(filter)' makes \(size) pictures of \(source); video needs an even width and height, "
                + "so they are recorded as \(recorded) (their \(left) left out; a filter such as scale=\(even.width):\(even.height) or crop=\(even.width):\(even.height) gives an even size)"
        case .fittedToStartingSize:
            break
        }
        return "reel: warning: the filter '\(filter)' makes \(size) pictures of \(source), but the recording's size is \(recorded), set when it started: "
            + "they are fitted into it, their aspect kept; to record at the filter's size, give it with --filter when starting (--size WxH records at another size)"
    }

    /// Clears the progress line so that a line can be printed (a saved replay).
    func clearForPrint() {
        lock.lock(); defer { lock.unlock() }
        clearLine()
    }

    func finishLine() {
        lock.lock(); defer { lock.unlock() }
        if lineShown { console.errRaw("\n"); lineShown = false }
    }

    /// A line of its own on the terminal (the progress line is drawn again after it).
    /// The countdown line on a terminal: `left` seconds before recording begins.
    func showCountdown(_ left: Double) {
        lock.lock(); defer { lock.unlock() }
        showCountdownLocked(left)
    }

    private func showCountdownLocked(_ left: Double) {
        guard !json && console.isTerminal else { return }
        console.errRaw("\r\u{1B}[2K" + RecordSchedule.countdownText(left) + "… (q or Ctrl-C gives up)")
        lineShown = true
    }

    /// The local time `seconds` from now, as ISO 8601 with its offset (`2026-12-05T14:30:00+01:00`).
    static func wallClock(in seconds: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = .current
        // To the nearest second, so that asking again names the same moment.
        return formatter.string(from: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + seconds).rounded()))
    }

    func note(_ text: String) {
        lock.lock(); defer { lock.unlock() }
        emit(["event": "note", "message": text]); if !json { clearLine(); console.err("reel: \(text)") }
    }

    private func clearLine() {
        if lineShown { console.errRaw("\r\u{1B}[2K"); lineShown = false }
    }

    func rounded(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }
}
