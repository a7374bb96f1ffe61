import Foundation

extension Recorder {
    /// In clip mode, the folder that holds this recording's clips (and their manifest) until
    /// they are merged into ``url`` at the stop; `nil` in single-file mode. A recording cut off
    /// before the merge (a crash, an abort) is there, not at ``url``:
    /// ``RecordingSession/recover(folder:to:overwrite:progress:)`` (`reel recover FOLDER`) merges it.
    public var clipsFolder: URL? {
        let settings = self.settings
        guard settings.pauseMode == .clips else { return nil }
        return recordingSession?.folder ?? settings.clipsFolder ?? RecordingSession.defaultFolder(for: url)
    }

    /// For a recording whose file is made only at the stop (a GIF: see
    /// ``Container/intermediateContainer``), the hidden file beside ``url`` it is recorded into
    /// until then (`.NAME.gif-PID-N.mp4`); `nil` for other recordings and before the start. It
    /// goes once the GIF is complete; a recording cut off before (a crash, a kill, a conversion
    /// that failed) is there, and ``recover(_:to:overwrite:progress:)`` of ``url`` (or of
    /// this file) makes it into the GIF.
    public var intermediateURL: URL? { state.withLock { $0.intermediate } }

    /// Makes a recording cut off by a crash (a fragmented MP4/MOV, an MKV; a GIF's
    /// intermediate, into the GIF) into a finalised file with everything it held, at `output`
    /// or in place; `progress` hears how far it has come (see ``Recovery/recover(_:to:overwrite:progress:)``).
    public static func recover(_ url: URL, to output: URL? = nil, overwrite: Bool = false,
                               progress: (@Sendable (WorkProgress) -> Void)? = nil) throws -> Recovery.Summary {
        try Recovery.recover(url, to: output, overwrite: overwrite, progress: progress)
    }

    /// Gives the recording up at once, as a process does that ends without stopping it (a
    /// second interrupt): nothing is finalised, and its files are left as they are on the disk,
    /// made safe to leave (see ``RecordingFile/AbortReport``). What holds nothing recorded yet
    /// is removed (in clip mode, a clip that holds no sample, such as the one being recorded
    /// before its first part reached the disk; and the clips folder when no clip is left), a
    /// file deleted while it was recorded is copied back, a file it was to
    /// replace stays as it was; the report says where the recording is and what finishes it
    /// (``RecordingFile/AbortReport/recoveryTarget``). Clips left in their folder are no longer
    /// said to be in use: a recording into the name is refused with how to recover them.
    /// The playlists of HLS streams into folders among ``sinks`` that have no end yet are
    /// named too (``RecordingFile/AbortReport/unendedPlaylists``).
    ///
    /// Safe to call from any thread at any moment, also while the session starts or stops:
    /// the recorder's thread is not waited for. A start under way (its file made, its encoders
    /// and sinks opening: a stream's connect) is waited for, up to 10 s, and then gives its
    /// file up. A finalise the stop has under way is given up
    /// between two of its steps (waiting for the one under way, a write and its sync), so that
    /// the report stays true: the file is then as a crash there leaves it (it plays, and
    /// ``recover(_:to:overwrite:progress:)`` completes it), or, finalised by then, the report
    /// says ``RecordingFile/AbortReport/Outcome/finished(_:)``. The process is expected to
    /// end soon after; a session stopped instead finishes what the recorder still writes, but
    /// does not finalise the file (its result is an error that says so).
    public func abort() -> RecordingFile.AbortReport {
        var report = abortFile()
        report.unendedPlaylists = sinks.compactMap { $0 as? LiveStream }.map(\.url)
            .filter { $0.isFileURL && $0.pathExtension.lowercased() == "m3u8" && PlaylistRecovery.isUnended($0) }
        return report
    }

    /// What ``abort()`` leaves of the recording's file.
    private func abortFile() -> RecordingFile.AbortReport {
        // A file being made is waited for (an encoder's open, a stream's connect: seconds at
        // most), so that the report speaks of what is on the disk after it, not before.
        let preparing = state.withLock { s -> DispatchGroup? in
            guard s.machine.phase == .preparing else { return nil }
            s.abortedWhilePreparing = true
            return s.preparation
        }
        if let preparing { _ = preparing.wait(timeout: .now() + .seconds(10)) }
        let (settings, intermediate, earlier, recording, gate, prepared) = state.withLock { s in
            let prepared = s.machine.phase != .idle || s.abortedWhilePreparing
            // Not prepared, it never will be: the report says nothing was recorded, and no
            // file is made after it.
            if !prepared { s.abortedBeforePreparing = true }
            return (s.settings, s.intermediate, s.earlierFile, s.recordingFile, s.finaliseGate, prepared)
        }
        let container = settings.container ?? Container(pathExtension: url.pathExtension) ?? .mp4
        guard writesFile else {
            return RecordingFile.AbortReport(outcome: .noFile, unchangedFile: nil, unfinishedCopies: [], container: container)
        }
        let file = RecordingFile(url: url)
        guard prepared else {
            return RecordingFile.AbortReport(outcome: .nothingRecorded, unchangedFile: earlierFileAtTheName() == nil ? nil : url,
                                             unfinishedCopies: [], container: container)
        }
        var report = file.abandon(container: container, clipsFolder: clipsFolder, intermediate: intermediate,
                                  earlierFile: earlier, recordingFile: recording, finaliseGate: gate)
        if case .clips = report.outcome, let session = recordingSession {
            // A clip that holds no sample yet is no recording: it goes, and with no clip left
            // so does the folder (nothing reached the disk).
            if session.tidyAfterAbort() { report.outcome = .nothingReachedTheDisk(removedFile: true) }
            // The clips are given up: not in use any more, but unmerged clips to recover, which
            // is what a recording into the name (in this process too) is told.
            session.releaseFolderLock()
        }
        return report
    }

    /// A preparation that an abort overtook (see ``State/abortedWhilePreparing``): the file it
    /// made goes (it holds no sample, the recorder's thread never ran; only what holds nothing
    /// recorded is removed), its encoders are let go, the recorder cannot start again, and the
    /// error to throw is returned. `nil` when no abort came.
    func givenUpByAnAbort(_ pipeline: RecorderPipeline, session: RecordingSession) -> ReelError? {
        let aborted = state.withLock { s in
            guard s.abortedWhilePreparing else { return false }
            s.machine.preparationFailed()
            s.abortedBeforePreparing = true
            return true
        }
        guard aborted else { return nil }
        // The file made: a GIF's intermediate, or the recording's own (at its name, or hidden
        // while it replaces a file). Clip mode makes a clip's file only with its first packet.
        let made = pipeline.intermediate.flatMap { OpenFile.held(at: $0) } ?? RecordingFile.heldFile(for: url)
        if writesFile, let made, !made.isDeleted {
            _ = RecordingFile.removeIfItHoldsNothing(made.path, identity: made.identity)
        }
        _ = pipeline.abandon()
        // The clips' folder claimed (its list of clips, the folder if made for it) is let go.
        if pipeline.clipFiles != nil { session.releaseClaim() }
        let failure = ReelError(.notRunning, "the recording was aborted as it started: nothing was recorded")
        let waiters = state.withLock { s in
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume(returning: .failure(failure)) }
        return failure
    }

    /// Lets an aborted recorder go when no session will stop it (a camera recorder's take given
    /// up while capture runs on): its thread takes no more samples and ends without finishing
    /// or merging anything (the files stay as ``abort()`` left them), its encoders and files
    /// are let go, and ``result()`` returns the failure. Without it the thread would wait for
    /// samples until the process ends.
    package func release() {
        let queue = state.withLock { s -> Channel<RecorderInput>? in
            s.released = true
            return s.queue
        }
        stopAudioWaiting()
        queue?.close()
    }

    /// What a released recorder's ``result()`` says.
    static let released = ReelError(.notRunning, "the recording was aborted: nothing was finished",
                                    hint: "what was recorded is where the abort left it")

    /// The checks the recorder makes before it starts (see
    /// ``RecordingFile/preflight(overwrite:pauseMode:clipsFolder:inputs:minimumFreeSpace:)``),
    /// with its settings: an application calls it to refuse a bad name before it opens its
    /// sources. Does nothing for a recorder that writes no file.
    public func preflight(inputs: [URL] = []) throws {
        guard writesFile else { return }
        let settings = self.settings
        try RecordingFile(url: url).preflight(overwrite: settings.overwrite, pauseMode: settings.pauseMode,
                                              clipsFolder: settings.clipsFolder, inputs: inputs,
                                              minimumFreeSpace: settings.minimumFreeSpace)
    }

    /// Before the file is made: the preflight, and the leftovers of killed recordings of the
    /// name tidied.
    func prepareFile() throws {
        guard writesFile else { return }
        try preflight()
        RecordingFile(url: url).tidyLeftovers()
    }

    /// The file at the name before the recording makes its own (one it replaces is left as it
    /// was by an abort before the recording took the name). An empty file is nobody's
    /// recording (an application reserving a name makes one).
    func earlierFileAtTheName() -> FileIdentity? {
        writesFile && (FileIdentity.size(of: url) ?? 0) > 0 ? FileIdentity(url) : nil
    }

    /// Once the file is made: which file the recording writes (its identity, whatever its name
    /// becomes), the hidden file of a replacement or the name itself.
    func noteRecordingFile() {
        guard writesFile else { return }
        let identity = RecordingFile.heldFile(for: url)?.identity
        state.withLock { $0.recordingFile = identity }
    }
}

extension Recorder {
    /// Whether the recorder's thread has ended (or never began).
    package var workerHasEnded: Bool { state.withLock { $0.worker }?.hasEnded ?? true }
}
