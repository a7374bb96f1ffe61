// What a preview's status bar shows of a camera recorder's take.

extension CameraRecorder {
    /// The take's size so far (what its recorder's newest progress says) and the frames its
    /// clips lost, those kept (``RecordingSession/frameDrops``: an undone clip takes its drops
    /// with it, as in the merged file's summary); zero between takes.
    package var takeProgress: (bytes: Int64, droppedFrames: Int64) {
        guard let recorder = state.withLock({ $0.recorder }) else { return (0, 0) }
        return (recorder.progress?.bytes ?? 0,
                recorder.recordingSession?.frameDrops.total ?? recorder.progress?.droppedFrames ?? recorder.droppedFrames)
    }
}

extension CameraRecorder {
    /// The take's recorder now (`nil` between takes).
    package var takeRecorder: Recorder? { state.withLock { $0.recorder } }
}
