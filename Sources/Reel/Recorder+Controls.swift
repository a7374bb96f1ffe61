import Foundation
import ReelFFmpeg

/// Controls from the API while recording: pauses and resumes (now or scheduled on the session
/// timeline) and chapter markers, handed to the recorder's thread in order with the samples.
extension Recorder {
    /// Whether the recording has taken its last sample: it is being finished (its file
    /// finalised, its streams ended), or has ended. What happens to a stream then happens at
    /// the stop, not to a recording that goes on.
    package var hasTakenItsLastSample: Bool { recordingWindow.load(ordering: .relaxed) == 2 }

    /// Whether the recording is paused at `time` on the session timeline (before its first
    /// frame when it starts paused; false when not recording).
    package func isPaused(atSessionTime time: MediaTime) -> Bool {
        state.withLock { $0.machine.isPaused(at: time) }
    }

    /// Pauses the recording at the next frame: that frame and the audio from the same instant
    /// on are left out until ``record()``. In clip mode this ends the current clip. Throws
    /// `.notRunning` when not recording; pausing twice is a no-op.
    public func pause() throws {
        try control(pause: true)
    }

    /// Resumes a paused recording at the next frame (in clip mode: starts the next clip).
    /// Throws `.notRunning` when not recording; resuming while recording is a no-op.
    public func record() throws {
        try control(pause: false)
    }

    /// Pauses if recording, resumes if paused.
    public func togglePause() throws {
        try control(pause: !isPaused)
    }

    /// Schedules a pause at `time` on the session timeline (the samples' presentation times):
    /// the recording pauses at the first frame slot at or after it. Pauses and resumes may be
    /// scheduled before the session starts (for scripted recordings and tests) and must come
    /// in time order.
    public func pause(at time: MediaTime) {
        schedule(pause: true, at: time)
    }

    /// Schedules a resume at `time` on the session timeline (see ``pause(at:)``).
    public func record(at time: MediaTime) {
        schedule(pause: false, at: time)
    }

    private func schedule(pause: Bool, at time: MediaTime) {
        state.withLock { state in
            state.machine.schedule(pause: pause, at: time)
            pendingControls.add(1, ordering: .releasing)
            for follower in state.pauseFollowers { follower.schedule(pause: pause, at: time) }
        }
    }

    /// Makes `follower`, a recorder of the same session (of one of this recording's sources on
    /// its own), pause and resume with this one: every pause and resume of this recording, asked
    /// for now, scheduled, or at its limit, is scheduled on `follower` at the same session time,
    /// so that what a user paused to hide is in none of the files. The follower takes the gap
    /// out as a single file does (it makes no clips of its own). Add followers before the
    /// session starts and before any pause is scheduled: earlier pauses are not passed on.
    package func addPauseFollower(_ follower: Recorder) {
        guard follower !== self else { return }
        state.withLock { $0.pauseFollowers.append(follower) }
    }

    private func control(pause: Bool, atLimit: Bool = false) throws {
        try state.withLock { state in
            let now = state.clock.map { $0.now() - state.origin } ?? .zero
            if try state.machine.request(pause: pause, at: now) {
                pendingControls.add(1, ordering: .releasing)
                // The followers' locks are taken under this one (never the other way round), so
                // that they get the pauses in the order this recording does.
                for follower in state.pauseFollowers { follower.schedule(pause: pause, at: now) }
                // The take ends now, though its clip is finished a moment later: an undo until
                // then must remove this take, not the one before. (At the limit the recording
                // paused itself and the clip was finished there.)
                if pause, !atLimit, state.settings.pauseMode == .clips { state.session?.takeEnded() }
            }
        }
    }

    /// The recording paused itself at its limit (``Settings/pausesAtLimit``): the record
    /// button's state follows, so that ``record()`` resumes it once time was handed back.
    package func notePausedAtLimit() {
        try? control(pause: true, atLimit: true)
    }

    /// The pause and resume requests waiting, taken from the state machine (none without a
    /// look under the lock when there are none).
    func takeControls() -> [RecorderPipeline.Control] {
        guard pendingControls.load(ordering: .acquiring) > 0 else { return [] }
        return state.withLock { s -> [RecorderPipeline.Control] in
            let c = s.machine.takeControls()
            pendingControls.subtract(c.count, ordering: .relaxed)
            return c
        }
    }

    /// Now on the session timeline (the time ``pause(at:)``, ``record(at:)`` and
    /// ``addMarker(_:at:)`` take); `nil` before the session has started the recorder.
    public var sessionTime: MediaTime? {
        state.withLock { s in s.clock.map { $0.now() - s.origin } }
    }

    // MARK: Chapter markers

    /// Puts a chapter marker at this moment of the recording, titled `title` ("Chapter N" if
    /// `nil` or empty, N the chapter's number in the file): the file gets a chapter there when
    /// it is finished (MP4/MOV: a chapter list; MKV: Matroska chapters). A marker while paused
    /// lands where the recording resumes. Markers that land at one instant (several while
    /// paused, or within one frame) make one chapter, titled with each title given, " / "
    /// between ("A / B"; one untitled adds no title), so no chapter is empty and none is lost.
    /// In clip mode it goes into the clip it falls in, survives the merge and a recovery of
    /// the clips (``RecordingSession/recover(folder:to:overwrite:progress:)``); a single file
    /// cut off before it is finished has none. ``RecordingEvent/markerAdded(_:)`` says where it
    /// was placed.
    ///
    /// - Throws: `.notRunning` when not recording; `.unsupportedFormat` when the recorder writes
    ///   no file, or a file that cannot hold chapters (``Container/holdsChapters``: WAV, FLAC,
    ///   Ogg, Opus, GIF); `.limitReached` when the file holds as many chapters as it can
    ///   (``Container/maximumChapters``: 255 in MP4, MOV and M4A); `.invalidConfiguration` for a
    ///   title longer than ``Chapter/maximumTitleBytes``, or one holding a control character (a
    ///   NUL, a line break, a tab: an MP4's title ends at a NUL): nothing is placed then.
    public func addMarker(_ title: String? = nil) throws {
        try checkHoldsMarkers()
        try Self.checkMarkerTitle(title)
        try state.withLock { state in
            guard state.machine.isRecording, let clock = state.clock else {
                throw ReelError(.notRunning, "there is no recording to mark", hint: "start recording first")
            }
            let container = state.settings.container(for: url)
            if let most = container.maximumChapters, state.markers.count >= most {
                throw ReelError(.limitReached, "a .\(container.fileExtension) file holds at most \(most) chapters, and this recording has \(most) markers already",
                                hint: "record into MKV to keep more markers")
            }
            state.markers.add(title, at: clock.now() - state.origin)
            markersWaiting.add(1, ordering: .releasing)
        }
    }

    /// Throws `.unsupportedFormat` unless this recorder's file can keep chapter markers.
    private func checkHoldsMarkers() throws {
        guard writesFile else {
            throw ReelError(.unsupportedFormat, "this recorder writes no file, so a marker has nowhere to be kept",
                            hint: "markers go into a recording's file (MP4, MOV, M4A, MKV or WebM)")
        }
        let container = state.withLock { $0.settings.container(for: url) }
        guard container.holdsChapters else {
            throw ReelError(.unsupportedFormat, "a .\(container.fileExtension) file cannot hold chapter markers, so none was placed",
                            hint: "record into MP4, MOV, M4A, MKV or WebM to keep markers")
        }
    }

    /// Throws `.invalidConfiguration` for a title no file keeps whole.
    private static func checkMarkerTitle(_ title: String?) throws {
        if let title, let index = title.unicodeScalars.firstIndex(where: { $0.properties.generalCategory == .control }) {
            let scalar = title.unicodeScalars[index]
            let position = title.unicodeScalars.distance(from: title.unicodeScalars.startIndex, to: index) + 1
            throw ReelError(.invalidConfiguration, String(format: "a marker's title may not hold control characters; this one has U+%04X at character %d", scalar.value, position),
                            hint: "give a title of printable characters (a NUL would end it in an MP4 file)")
        }
        let bytes = title?.utf8.count ?? 0
        guard bytes <= Chapter.maximumTitleBytes else {
            throw ReelError(.invalidConfiguration, "a marker's title holds at most \(Chapter.maximumTitleBytes) bytes; this one has \(bytes)",
                            hint: "give a shorter title")
        }
    }

    /// Schedules a chapter marker at `time` on the session timeline (the samples' presentation
    /// times), as ``pause(at:)`` schedules a pause; see ``addMarker(_:)``. A file that cannot
    /// hold chapters (``Container/holdsChapters``) gets none. Control characters in `title`,
    /// which ``addMarker(_:)`` refuses, become spaces here.
    public func addMarker(_ title: String? = nil, at time: MediaTime) {
        state.withLock { state in
            state.markers.add(title, at: time)
            markersWaiting.add(1, ordering: .releasing)
        }
    }

    /// The markers at or before session time `time` (all with `nil`), in time order; their
    /// `start` is the session time (none without a look under the lock when there are none).
    func takeMarkers(upTo time: MediaTime?) -> [Chapter] {
        guard markersWaiting.load(ordering: .acquiring) > 0 else { return [] }
        return state.withLock { s in
            let due = s.markers.take(upTo: time)
            markersWaiting.subtract(due.count, ordering: .relaxed)
            return due
        }
    }
}

/// Chapter markers asked for and not yet placed on the recording's timeline, at their session
/// times, with the titles given (empty for none).
struct PendingMarkers {
    private var waiting: [Chapter] = []
    /// The markers asked for so far (placed or waiting).
    private(set) var count = 0

    mutating func add(_ title: String?, at time: MediaTime) {
        count += 1
        // No control character reaches a file (an MP4's title ends at a NUL).
        let printable = (title ?? "").unicodeScalars.map { $0.properties.generalCategory == .control ? " " : String($0) }.joined()
        // Untitled (empty): named by its chapter's number once placed.
        waiting.append(Chapter(start: time, title: printable.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    /// Takes those at or before `time` (all with `nil`), in time order.
    mutating func take(upTo time: MediaTime?) -> [Chapter] {
        let due = waiting.filter { time == nil || $0.start <= time! }.sorted { $0.start < $1.start }
        waiting.removeAll { time == nil || $0.start <= time! }
        return due
    }
}

extension Recorder {
    /// Gives up connecting to the live streams: a stop while a server is slow to answer ends
    /// the start at once, and no file is left.
    public func cancelStart() {
        for case let stream as LiveStream in sinks { stream.cancel() }
    }
}

/// The recorder's encoder crops, scales and converts a picture whose zoom was left to it.
extension Recorder: DeferredViewTaker {}
