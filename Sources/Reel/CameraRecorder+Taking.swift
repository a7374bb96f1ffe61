import Foundation

/// Capture and takes: ``CameraRecorder/start()`` and ``CameraRecorder/stop()`` run the camera;
/// ``CameraRecorder/record()`` and ``CameraRecorder/pause()`` make a take's clips;
/// ``CameraRecorder/stopRecording()`` ends a take while the camera runs on, and the next
/// ``CameraRecorder/record()`` begins another into a new file.
extension CameraRecorder {
    // MARK: Taking

    /// Starts capture and the preview outputs without recording.
    ///
    /// Nothing is written until ``record()``, so a file at ``outputURL`` (the last take's,
    /// after a ``stop()``) is no reason to refuse: capture starts, and ``record()`` refuses the
    /// name, saying what to do, unless ``outputURL`` is set to a new file first (or
    /// ``startRecording(to:)`` is given one), as `AVCaptureSession.startRunning()` is followed
    /// by `startRecording(to:)` with each recording's own file.
    ///
    /// - Throws: `.alreadyRunning` if capture runs; the camera's or microphone's error if it
    ///   cannot start.
    public func start() async throws {
        let (outputs, explicit, overwrite) = try state.withLock { s -> ([any CaptureOutput], URL?, Bool) in
            guard s.session == nil else { throw ReelError(.alreadyRunning, "the camera recorder is already running") }
            return (s.previewOutputs, s.outputURL, s.settings.overwrite)
        }
        // A take begins now unless its file is taken (p5: start() refused, though it writes
        // nothing); then it begins at record(), which refuses the name or takes a new one.
        let take: (recorder: Recorder, url: URL, askedFor: URL?, merges: Bool)?
        if explicit.flatMap({ refusal(ofName: $0, overwrite: overwrite) }) == nil { take = try newTake() } else { take = nil }
        let session = CaptureSession(clock: clock)
        try session.addInput(camera)
        if let microphone { try session.addInput(microphone) }
        let output = TakeOutput(recording: take?.recorder)
        try session.addOutput(output)
        for output in outputs { try session.addOutput(output) }
        try session.addOutput(live, connectedTo: [camera])
        try session.addOutput(ProgressTap(owner: self), connectedTo: [camera])
        if let connection = session.connection(for: camera) { look.attach(connection) }
        let pump = take.map { pumpEvents(of: $0.recorder, merges: $0.merges) }
        state.withLock { s in
            s.session = session
            s.takeOutput = output
            if let take, let pump {
                s.begin(take.recorder, url: take.url, askedFor: take.askedFor, pump: pump)
            } else {
                s.take.startedBetweenTakes()
            }
        }
        publish()
        do {
            try await session.start()
        } catch {
            if let take, take.askedFor == nil { Recorder.releaseReservation(take.url) }
            pump?.cancel()
            look.attach(nil)
            state.withLock { s in
                s.session = nil
                s.takeOutput = nil
                s.recorder = nil
                s.pump = nil
                s.take.stopped()
            }
            publish()
            throw error
        }
    }

    /// A take's recorder, not yet prepared: into ``outputURL`` (or a new dated file in the
    /// videos folder), clips on, nothing recorded until ``record()``.
    private func newTake() throws -> (recorder: Recorder, url: URL, askedFor: URL?, merges: Bool) {
        let (settings, explicit, merges, makeSinks) = state.withLock { s in (s.settings, s.outputURL, s.mergesClipsAutomatically, s.sinksForEachTake) }
        var take = settings
        take.pauseMode = .clips
        take.mergesClipsAtEnd = merges
        // A take waits at its limit: removing clips gives time back and it goes on.
        take.pausesAtLimit = true
        // A take whose disk fills fails, told to the delegate, its completed clips listed.
        take.failsWhenItsClipsDiskFills = true
        let url: URL
        if let explicit {
            try refuseTakenName(explicit, overwrite: take.overwrite)
            url = explicit
        } else {
            let folder = Recorder.defaultOutputDirectory()
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            // Reserved (made empty) so that no other recording takes the name; the take's
            // recorder gives it back once its clips folder holds the name.
            url = try Recorder.reserveDatedFile(in: folder, container: take.container ?? .mp4)
        }
        let recorder = Recorder(url: url, settings: take, sinks: makeSinks?(url) ?? [])
        // Nothing is recorded until `record()`: the first clip starts then.
        recorder.pause(at: .zero)
        return (recorder, url, explicit, merges)
    }

    /// A take never replaces a file at ``outputURL`` (an earlier take's recording, most often):
    /// refused with what to do, unless the settings allow overwriting. A recording cut off by
    /// a crash is left to the recorder's own check, which says how to recover it.
    private func refuseTakenName(_ url: URL, overwrite: Bool) throws {
        if let refusal = refusal(ofName: url, overwrite: overwrite) { throw refusal }
    }

    /// Why a take may not record into `url` (see ``refuseTakenName(_:overwrite:)``), if it may
    /// not; `given` when `url` was given to ``startRecording(to:)``, whose error then says to
    /// give it another.
    private func refusal(ofName url: URL, overwrite: Bool, given: Bool = false) -> ReelError? {
        // A dated name this process reserved (an empty file) is the take's to record into.
        guard !overwrite, FileManager.default.fileExists(atPath: url.path), !Recorder.isOwnReservation(url),
              !Recovery.isCutOff(url) else { return nil }
        let previous = state.withLock { $0.takeURL }
        let whose = previous.map { RecordingFile.isSameFile($0, url) } == true ? ": it holds the previous take's recording" : ""
        let why = "each take records into its own file, as AVCaptureMovieFileOutput takes a URL for each recording"
        return ReelError(.fileExists, "\(url.path) already exists\(whose), and a take never replaces a file",
                         hint: given ? "give startRecording(to:) a new file (\(why))"
                             : "set outputURL to a new file for this take before record() (\(why)), or to nil for a new dated file in the videos folder")
    }

    /// The take's recorder's events, passed on until it finishes.
    private func pumpEvents(of recorder: Recorder, merges: Bool) -> Task<Void, Never> {
        Task { [weak self] in
            for await event in recorder.events { self?.handle(event, merges: merges) }
        }
    }

    /// Starts recording a clip (the first, or the next after a pause). The first clip of a
    /// take, and the first after ``stopRecording()`` (a new take), records into ``outputURL``
    /// as it is set now (or a new dated file in the videos folder), while the camera runs on as
    /// it did.
    ///
    /// - Throws: `.notRunning` before ``start()``; `.limitReached` once the take has reached
    ///   ``maxRecordedDuration``; the take's error if its recording failed; for a take's first
    ///   clip, `.fileExists` if ``outputURL`` (changed since the take began) exists: a take
    ///   never replaces a file, so the error says to give the take a new one (unless the
    ///   settings allow overwriting).
    public func record() throws {
        try buttons.withLock { try recordPressed() }
    }

    /// The record button, its press held.
    private func recordPressed() throws {
        dropUnrecordedTakeIfRenamed()
        if state.withLock({ $0.take.phase == .betweenTakes }) { try beginNextTake() }
        try press { try $0.record() } then: { try $0.record() }
        state.withLock { $0.takeHasRecorded = true }
    }

    /// Begins a take into `url` and records its first clip: what
    /// `AVCaptureMovieFileOutput.startRecording(to:recordingDelegate:)` does. It sets
    /// ``outputURL`` to `url` and presses ``record()``; ``pause()`` and ``record()`` then make
    /// the take's clips, and ``stopRecording()`` ends it into `url` while the camera runs on,
    /// ready for the next `startRecording(to:)` with a new file.
    ///
    /// - Throws: `.alreadyRunning` while a take records (or waits at its limit) into another
    ///   file: ``stopRecording()`` ends it first; `.fileExists` if a file is at `url` (a take
    ///   never replaces one, unless the settings allow overwriting); what ``record()`` throws.
    public func startRecording(to url: URL) throws {
        try buttons.withLock {
            // Refused before anything changes: the take going on, and outputURL, stay as they are.
            if let refusal = refusal(ofName: url, overwrite: settings.overwrite, given: true) { throw refusal }
            try state.withLock { s in
                if s.takeHasRecorded, s.take.phase != .betweenTakes, s.take.phase != .stopped, let current = s.takeURL {
                    throw ReelError(.alreadyRunning, "a take is being recorded into \(current.path)",
                                    hint: "stopRecording() ends it into its file; then startRecording(to:) begins the next")
                }
                s.outputURL = url
            }
            try recordPressed()
        }
    }

    /// ``outputURL`` changed since the take began (at ``start()``) and nothing was recorded
    /// yet: that take, which holds no clip, ends without a file and the record button begins
    /// one into ``outputURL`` as it is now.
    private func dropUnrecordedTakeIfRenamed() {
        let dropped = state.withLock { s -> (Recorder, Task<Void, Never>?)? in
            guard s.take.phase == .paused, !s.takeHasRecorded, s.outputURL != s.takeAskedFor,
                  let recorder = s.recorder, let output = s.takeOutput else { return nil }
            _ = output.detach()
            s.take.ended()
            s.recorder = nil
            defer { s.pump = nil }
            return (recorder, s.pump)
        }
        guard let (recorder, pump) = dropped else { return }
        // Its only event would be that nothing was recorded: not the app's concern.
        pump?.cancel()
        Task {
            await recorder.finish()
            _ = try? await recorder.result()
        }
    }

    /// Begins a take while capture runs: its recorder prepared in the running session.
    private func beginNextTake() throws {
        guard let output = state.withLock({ $0.takeOutput }) else {
            throw ReelError(.notRunning, "the camera recorder is not running", hint: "call start() first")
        }
        let (recorder, url, asked, merges) = try newTake()
        do {
            try output.attach(recorder)
        } catch {
            if asked == nil { Recorder.releaseReservation(url) }
            throw error
        }
        let pump = pumpEvents(of: recorder, merges: merges)
        state.withLock { $0.begin(recorder, url: url, askedFor: asked, pump: pump) }
        publish()
    }

    /// `AVCaptureMovieFileOutput`'s name for ``record()`` after a pause.
    public func resumeRecording() throws { try record() }

    /// Ends the clip being recorded; capture and the preview outputs go on.
    ///
    /// - Throws: `.notRunning` before ``start()``; `.limitReached` once the take has reached
    ///   ``maxRecordedDuration``.
    public func pause() throws {
        try buttons.withLock {
            try press { try $0.pause() } then: { try $0.pause() }
        }
    }

    /// The record or pause button: the take's transition, then the recorder's. A recorder that
    /// ended by itself before the take saw it (its limit reached between two pictures) makes
    /// the take end too, and the error say why.
    private func press(_ transition: (inout CameraTake) throws -> Void, then act: (Recorder) throws -> Void) throws {
        let (recorder, before) = try state.withLock { s -> (Recorder?, CameraTake) in
            let before = s.take
            try transition(&s.take)
            return (s.recorder, before)
        }
        do {
            if let recorder { try act(recorder) }
        } catch {
            let ended = state.withLock { s -> Bool in
                s.take = before
                guard let limit = s.settings.maxRecordedDuration, let clips = s.recorder?.recordingSession,
                      s.take.recorded(clips.totalDuration, limit: limit) else { return false }
                return true
            }
            publish()
            if ended {
                emit(.limitReached(recorded: recordedDuration))
                var take = state.withLock { $0.take }
                try transition(&take)   // throws why: the limit
            }
            throw error
        }
        publish()
    }

    /// Ends the take while the camera runs on: what `AVCaptureMovieFileOutput.stopRecording()`
    /// does. The clip being recorded ends, the take's clips are merged into
    /// ``currentOutputURL`` (with ``mergesClipsAutomatically``; without, the summary's `url` is
    /// the clips' folder) and its summary returned, every event of the take delivered. Capture,
    /// the preview outputs and ``previewFrames(_:)`` go on without a pause; ``clips`` and
    /// ``recordingSession`` keep the ended take's clips until the next ``record()`` begins a new
    /// take into a new file. Returns `nil` when the take recorded nothing (and leaves no file),
    /// or when no take is going on.
    ///
    /// - Throws: `.notRunning` before ``start()``; the take's error if its recording failed
    ///   (the take ends all the same, and the next ``record()`` begins a new one).
    public func stopRecording() async throws -> RecordingSummary? {
        let ended = try buttons.withLock {
            try state.withLock { s -> (Recorder, Task<Void, Never>?)? in
                guard s.session != nil, let output = s.takeOutput else {
                    throw ReelError(.notRunning, "cannot stop recording: the camera recorder is not running", hint: "call start() first")
                }
                guard let recorder = s.recorder, s.take.phase != .betweenTakes else { return nil }
                _ = output.detach()
                s.take.ended()
                return (recorder, s.pump)
            }
        }
        guard let (recorder, pump) = ended else { return nil }
        publish()
        await recorder.finish()
        let outcome = await Self.outcome(of: recorder, pump: pump)
        state.withLock { s in
            // Unless a stop came meanwhile and took the take's clips itself.
            if s.recorder === recorder {
                s.clips = recorder.recordingSession
                s.recorder = nil
                s.pump = nil
            }
        }
        publish()
        switch outcome {
        case .success(let summary): return summary
        case .failure(let error as ReelError) where error.code == .nothingRecorded: return nil
        case .failure(let error): throw error
        }
    }

    /// Removes the last clip of this take (its file too), while paused or after ``stop()``.
    /// After a stop that merged the clips (``mergesClipsAutomatically``) the clips' files went
    /// with the merge, and the merged file is left as it is: there is nothing left to merge
    /// again. To undo after a stop and merge what remains, stop without the automatic merge
    /// (`mergesClipsAutomatically = false`), then remove and merge with ``recordingSession``.
    ///
    /// Right after ``pause()`` the clip just ended is still being finished: it is not in
    /// ``clips`` yet (it comes with ``Event/clipCompleted(_:)``). An undo then removes that
    /// clip: its time leaves ``recordedDuration`` and ``progress`` at once, its file goes when
    /// it is finished, and it is never reported completed. An app's clip list drawn from
    /// ``clips`` (or from the completed events) and its undo button are right either way.
    ///
    /// A take at its limit (``hasReachedLimit``) is open again once what remains is under
    /// ``maxRecordedDuration``: ``record()`` records on, as NextLevel's session does after its
    /// last clip is removed.
    ///
    /// With no clip and none being finished (before the first take too) it does nothing and
    /// returns `false`, as ``removeAllClips()`` does nothing then: an undo button pressed once
    /// too often is no error.
    ///
    /// While a clip is being recorded it removes nothing and throws: the last clip is then the
    /// one being recorded, and the clip finished before it is not what an undo pressed
    /// mid-clip means (it removed that one, and the merge lost it: p5).
    ///
    /// - Returns: whether a clip was removed.
    /// - Throws: `.alreadyRunning` while a clip is being recorded (``pause()`` first); the
    ///   error of writing the clips' manifest (a full disk): the clip is no longer listed, and
    ///   its file is kept.
    @discardableResult
    public func removeLastClip() throws -> Bool {
        if isRecording {
            throw ReelError(.alreadyRunning, "a clip is being recorded: the last clip is the one still being recorded",
                            hint: "pause() first; the undo then removes the clip it ended")
        }
        guard let clips = recordingSession, try clips.removeLastClip() else { return false }
        clipsRemoved(from: clips)
        return true
    }

    /// Clips were removed from `clips`: progress counts again from what remains, and a take at
    /// its limit is open again once that is under ``maxRecordedDuration``.
    private func clipsRemoved(from clips: RecordingSession) {
        let reopened = state.withLock { s -> Bool in
            s.reported = nil
            return s.take.reopened(recorded: clips.totalDuration, limit: s.settings.maxRecordedDuration)
        }
        publish()
        // The take at its limit is open again: said as progress below 1.
        if reopened { emit(.progress(recorded: recordedDuration, progress: progress)) }
    }

    /// A take's end: its summary or its error, once its events have all been passed on.
    private static func outcome(of recorder: Recorder, pump: Task<Void, Never>?) async -> Result<RecordingSummary, any Error> {
        let outcome: Result<RecordingSummary, any Error>
        do {
            outcome = .success(try await recorder.result())
        } catch {
            outcome = .failure(error)
        }
        await pump?.value
        return outcome
    }

    /// Removes every clip of this take (their files too), the one being finished right after a
    /// ``pause()`` included; a take at its limit is open again (see ``removeLastClip()``). Does
    /// nothing when there is none (before the first take too), as ``removeLastClip()`` does.
    public func removeAllClips() {
        guard let clips = recordingSession else { return }
        clips.removeAllClips()
        clipsRemoved(from: clips)
    }

    /// Stops capture and finishes the take: the clips merged into ``currentOutputURL`` (with
    /// ``mergesClipsAutomatically``; without, the summary's `url` is the clips' folder and the
    /// files are in ``clips``). Returns `nil` when nothing was recorded, or when the last take
    /// ended at ``stopRecording()`` and no new one began. Every event of the take has been
    /// delivered when it returns. The recorder can ``start()`` again for a new take.
    public func stop() async throws -> RecordingSummary? {
        guard let (session, recorder, pump) = state.withLock({ s -> (CaptureSession, Recorder?, Task<Void, Never>?)? in
            guard let session = s.session else { return nil }
            s.take.stopped()
            return (session, s.recorder, s.pump)
        }) else {
            return nil
        }
        publish()
        await session.stop()
        defer {
            look.attach(nil)
            state.withLock { s in
                if let recorder { s.clips = recorder.recordingSession }
                s.session = nil
                s.takeOutput = nil
                s.recorder = nil
                s.pump = nil
            }
            publish()
        }
        guard let recorder else { return nil }
        let outcome = await Self.outcome(of: recorder, pump: pump)
        switch outcome {
        case .success(let summary): return summary
        case .failure(let error as ReelError) where error.code == .nothingRecorded: return nil
        case .failure(let error): throw error
        }
    }

    /// Gives the take up at once, as a process does that ends without stopping it: see
    /// ``Recorder/abort()`` (the clips stay in their folder, to recover with
    /// ``RecordingSession/recover(folder:to:overwrite:progress:)``; the clip being recorded
    /// goes if it holds no sample yet, and the folder too if no clip is left: the report then
    /// says `nothingReachedTheDisk`). Capture goes on: the take ends without
    /// a merge (``stop()`` does not finish it), and the next ``record()`` begins a new one,
    /// which is refused at the aborted take's name while its clips are there. `nil` when no
    /// take is going on.
    public func abort() -> RecordingFile.AbortReport? {
        let given = state.withLock { s -> (Recorder, Task<Void, Never>?)? in
            guard let recorder = s.recorder else { return nil }
            _ = s.takeOutput?.detach()
            s.take.ended()
            s.recorder = nil
            s.clips = nil
            defer { s.pump = nil }
            return (recorder, s.pump)
        }
        guard let (recorder, pump) = given else { return nil }
        pump?.cancel()
        publish()
        let report = recorder.abort()
        // No session stops this take's recorder: its thread would wait for samples for good.
        recorder.release()
        return report
    }
}
