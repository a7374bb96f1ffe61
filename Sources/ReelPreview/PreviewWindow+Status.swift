import Reel

// The status bar: a status the app gives, or a recorder's recording followed as it goes.

extension PreviewWindow {
    /// Shows `status` in the status bar over the picture, showing the bar if it was not (from
    /// any thread).
    public func show(_ status: Status) {
        state.withLock { s in
            s.status = status
            s.followed = nil
            s.readFollowed = nil
        }
        poke()
    }

    /// Shows the recording of `recorder` in the status bar, and follows it as it goes:
    /// recording, paused or not yet, its time, size and dropped frames, and how far it is
    /// toward its limit. For a preview beside a ``Reel/Recorder`` in the same session, as an
    /// app shows its movie output's state over `AVCaptureVideoPreviewLayer`. The bar follows
    /// the recorder (held weakly) until ``show(_:)`` or ``hideStatus()``.
    public func showStatus(of recorder: Recorder) {
        follow(recorder) { ($0 as? Recorder).map(Status.init(of:)) }
    }

    /// Shows the takes of `recorder` in the status bar, and follows them as they go: recording,
    /// paused or between takes, the time recorded over the take's clips, its size and dropped
    /// frames, and how far it is toward ``Reel/CameraRecorder/maxRecordedDuration``. For a
    /// camera app's preview (a NextLevel-style record button over the picture). The bar
    /// follows the recorder (held weakly) until ``show(_:)`` or ``hideStatus()``.
    public func showStatus(of recorder: CameraRecorder) {
        follow(recorder) { ($0 as? CameraRecorder).map(Status.init(of:)) }
    }

    /// Takes the status bar away (the picture alone, as in a plain preview).
    public func hideStatus() {
        state.withLock { s in
            s.status = nil
            s.followed = nil
            s.readFollowed = nil
        }
        poke()
    }

    private func follow(_ recorder: AnyObject & Sendable, reading: @escaping @Sendable (AnyObject & Sendable) -> Status?) {
        let status = reading(recorder)
        state.withLock { s in
            s.followed = recorder
            s.readFollowed = reading
            s.status = status
        }
        poke()
    }

    /// Reads the followed recorder's status into the bar (the window's thread, each round).
    func followStatus() {
        guard let (recorder, reading) = state.withLock({ s in s.followed.flatMap { f in s.readFollowed.map { (f, $0) } } }) else { return }
        let status = reading(recorder)
        state.withLock { s in if s.followed === recorder { s.status = status } }
    }
}
