// What a preview's status bar shows of a camera recorder's take.

extension CameraRecorder {
    /// The take's size and dropped frames so far (zero between takes): what its recorder's
    /// newest progress says.
    package var takeProgress: (bytes: Int64, droppedFrames: Int64) {
        guard let recorder = state.withLock({ $0.recorder }) else { return (0, 0) }
        return (recorder.progress?.bytes ?? 0, recorder.progress?.droppedFrames ?? recorder.droppedFrames)
    }
}

extension CameraRecorder {
    /// The take's recorder now (`nil` between takes).
    package var takeRecorder: Recorder? { state.withLock { $0.recorder } }
}
