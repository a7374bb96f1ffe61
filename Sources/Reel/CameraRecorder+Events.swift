import Foundation

extension CameraRecorder {
    /// Something that happened to a camera recorder's take: what NextLevel's and VideoKit's
    /// delegates are told. Delivered in order, on ``CameraRecorder/events`` and to the
    /// ``CameraRecorder/delegate``.
    public enum Event: Sendable {
        /// A clip began: the record button took effect. `index` is its place among the take's
        /// clips (from zero): its index in ``CameraRecorder/clips`` once completed. Clips
        /// undone before it are not counted, as NextLevel's clip count after an undo: after
        /// clips 0 and 1 and an undo, the next clip is 1 again.
        case clipStarted(index: Int)
        /// A clip ended (a pause, the limit or the stop) and its file is finished.
        case clipCompleted(Clip)
        /// The take's recorded time changed (at each recorded frame): `recorded` over all its
        /// clips, and `progress`, the fraction of ``CameraRecorder/maxRecordedDuration`` (0
        /// without a limit).
        case progress(recorded: MediaTime, progress: Double)
        /// The take reached ``CameraRecorder/maxRecordedDuration``: nothing more is recorded
        /// (``CameraRecorder/record()`` throws `limitReached`) until
        /// ``CameraRecorder/removeLastClip()`` gives time back (a ``progress(recorded:progress:)``
        /// below 1 says the take is open again); ``CameraRecorder/stopRecording()`` or
        /// ``CameraRecorder/stop()`` ends the take and merges it (``mergeFinished(_:)``).
        case limitReached(recorded: MediaTime)
        /// The take's clips were merged into one file (at ``CameraRecorder/stopRecording()``
        /// or at the stop, with
        /// ``CameraRecorder/mergesClipsAutomatically``): what the file holds.
        case mergeFinished(RecordingSummary)
        /// The take's recording failed; what was recorded stays on disk (the hint says where).
        case failed(ReelError)
        /// The take's clips folder was moved (followed: nothing lost) or deleted (made again;
        /// the finished clips it held are lost, and the merged file leaves them out:
        /// ``RecordingSummary/lostClips``), as ``RecordingEvent/clipsFolderChanged(_:)`` says.
        case clipsFolderChanged(ClipsFolderChange)
        /// The camera or the microphone went away; the take goes on with the other, if any
        /// (AVCaptureSession's runtime error; ``RecordingEvent/sourceLost(name:error:)``).
        case sourceLost(name: String, error: ReelError)
        /// The camera or the microphone stopped delivering for a while, or has nothing to deliver,
        /// and is trying to come back (AVCaptureSession's `wasInterrupted`;
        /// ``RecordingEvent/sourceInterrupted(name:error:)`` and ``RecordingEvent/sourceSilent(name:error:)``).
        case sourceInterrupted(name: String, error: ReelError)
        /// An interrupted source delivers again (AVCaptureSession's `interruptionEnded`).
        case sourceResumed(name: String)
        /// Part of what a source delivers is not recorded, for instance sound lost while the
        /// machine did not read it (``RecordingEvent/sourceIncomplete(name:error:)``); the take
        /// goes on.
        case sourceIncomplete(name: String, error: ReelError)
    }
}

/// What a ``CameraRecorder`` tells its delegate, for code ported from NextLevel's
/// `NextLevelDelegate` or VideoKit's recorder delegate: each method is one
/// ``CameraRecorder/Event``, and each does nothing unless implemented.
///
/// The methods are called in the order things happened, one at a time, on a serial queue of
/// the recorder's (not the main thread): hop to the main actor for UI work
/// (`Task { @MainActor in … }`). The recorder holds its delegate weakly.
///
/// Each method has a default that does nothing, so a delegate implements those it needs; a
/// method whose name is not quite one of these (`cameraRecorder(_:didUpdateProgress:)`
/// without `recorded:`) is then taken for one of the delegate's own, without a word, and
/// never called. Copy the names, or switch over ``CameraRecorder/events``: a `switch` over
/// ``CameraRecorder/Event`` is checked by the compiler, case by case.
public protocol CameraRecorderDelegate: AnyObject, Sendable {
    /// A clip began (``CameraRecorder/Event/clipStarted(index:)``).
    func cameraRecorder(_ recorder: CameraRecorder, didStartClipAt index: Int)
    /// A clip ended and its file is finished (``CameraRecorder/Event/clipCompleted(_:)``).
    func cameraRecorder(_ recorder: CameraRecorder, didComplete clip: Clip)
    /// The recorded time changed, at each recorded frame: `progress` is its fraction of
    /// ``CameraRecorder/maxRecordedDuration`` (``CameraRecorder/Event/progress(recorded:progress:)``).
    func cameraRecorder(_ recorder: CameraRecorder, didUpdateProgress progress: Double, recorded: MediaTime)
    /// The take reached its limit and ended (``CameraRecorder/Event/limitReached(recorded:)``).
    func cameraRecorderDidReachLimit(_ recorder: CameraRecorder)
    /// The clips were merged into one file (``CameraRecorder/Event/mergeFinished(_:)``).
    func cameraRecorder(_ recorder: CameraRecorder, didFinishMerging summary: RecordingSummary)
    /// The take's recording failed (``CameraRecorder/Event/failed(_:)``).
    func cameraRecorder(_ recorder: CameraRecorder, didFailWith error: ReelError)
    /// The clips folder was moved or deleted (``CameraRecorder/Event/clipsFolderChanged(_:)``).
    func cameraRecorder(_ recorder: CameraRecorder, clipsFolderDidChange change: ClipsFolderChange)
    /// A source went away (``CameraRecorder/Event/sourceLost(name:error:)``).
    func cameraRecorder(_ recorder: CameraRecorder, didLoseSource name: String, error: ReelError)
    /// A source was interrupted (``CameraRecorder/Event/sourceInterrupted(name:error:)``).
    func cameraRecorder(_ recorder: CameraRecorder, sourceWasInterrupted name: String, error: ReelError)
    /// An interrupted source delivers again (``CameraRecorder/Event/sourceResumed(name:)``).
    func cameraRecorder(_ recorder: CameraRecorder, sourceInterruptionEnded name: String)
    /// Part of a source's sound or pictures is not recorded (``CameraRecorder/Event/sourceIncomplete(name:error:)``).
    func cameraRecorder(_ recorder: CameraRecorder, sourceIsIncomplete name: String, error: ReelError)
}

extension CameraRecorderDelegate {
    /// Does nothing.
    public func cameraRecorder(_ recorder: CameraRecorder, didStartClipAt index: Int) {}
    /// Does nothing.
    public func cameraRecorder(_ recorder: CameraRecorder, didComplete clip: Clip) {}
    /// Does nothing.
    public func cameraRecorder(_ recorder: CameraRecorder, didUpdateProgress progress: Double, recorded: MediaTime) {}
    /// Does nothing.
    public func cameraRecorderDidReachLimit(_ recorder: CameraRecorder) {}
    /// Does nothing.
    public func cameraRecorder(_ recorder: CameraRecorder, didFinishMerging summary: RecordingSummary) {}
    /// Does nothing.
    public func cameraRecorder(_ recorder: CameraRecorder, didFailWith error: ReelError) {}
    /// Does nothing.
    public func cameraRecorder(_ recorder: CameraRecorder, clipsFolderDidChange change: ClipsFolderChange) {}
    /// Does nothing.
    public func cameraRecorder(_ recorder: CameraRecorder, didLoseSource name: String, error: ReelError) {}
    /// Does nothing.
    public func cameraRecorder(_ recorder: CameraRecorder, sourceWasInterrupted name: String, error: ReelError) {}
    /// Does nothing.
    public func cameraRecorder(_ recorder: CameraRecorder, sourceInterruptionEnded name: String) {}
    /// Does nothing.
    public func cameraRecorder(_ recorder: CameraRecorder, sourceIsIncomplete name: String, error: ReelError) {}
}

extension CameraRecorderDelegate {
    /// Calls the method that stands for `event`.
    func receive(_ event: CameraRecorder.Event, from recorder: CameraRecorder) {
        switch event {
        case .clipStarted(let index): cameraRecorder(recorder, didStartClipAt: index)
        case .clipCompleted(let clip): cameraRecorder(recorder, didComplete: clip)
        case .progress(let recorded, let progress): cameraRecorder(recorder, didUpdateProgress: progress, recorded: recorded)
        case .limitReached: cameraRecorderDidReachLimit(recorder)
        case .mergeFinished(let summary): cameraRecorder(recorder, didFinishMerging: summary)
        case .failed(let error): cameraRecorder(recorder, didFailWith: error)
        case .clipsFolderChanged(let change): cameraRecorder(recorder, clipsFolderDidChange: change)
        case .sourceLost(let name, let error): cameraRecorder(recorder, didLoseSource: name, error: error)
        case .sourceInterrupted(let name, let error): cameraRecorder(recorder, sourceWasInterrupted: name, error: error)
        case .sourceResumed(let name): cameraRecorder(recorder, sourceInterruptionEnded: name)
        case .sourceIncomplete(let name, let error): cameraRecorder(recorder, sourceIsIncomplete: name, error: error)
        }
    }
}
