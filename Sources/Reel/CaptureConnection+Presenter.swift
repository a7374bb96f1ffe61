import Foundation
import Synchronization

/// An input's presenter overlays and where their events come from, taken at each start.
struct PresenterSetting: Sendable {
    var overlays = PresenterOverlays()
    var events: (any InputEventSource)?
    /// The events of the run under way.
    var log: InputEventLog?
}

extension CaptureConnection {
    /// The presenter overlays drawn on the input's pictures (clicks, keys, the pointer's disc,
    /// a zoom that follows it): none by default. See ``setPresenterOverlays(_:events:)``.
    public var presenterOverlays: PresenterOverlays { presenter.withLock { $0.overlays } }

    /// Draws `overlays` on the input's pictures from the next start of the session, from what
    /// `events` says the pointer and keyboard do (on X11, ``XInputEventSource``; in tests,
    /// ``RecordedInputEvents``). The session starts `events` when it starts and stops it when it
    /// stops; the overlays go into the recording, the live frames and a preview alike, never
    /// onto the screen. Empty `overlays` turn them off.
    ///
    /// **Everything typed is drawn, passwords too**, when ``PresenterOverlays/showsKeys`` is on:
    /// Ctrl+Alt+K hides the captions and shows them again. Keys pressed while a ``Recorder``
    /// fed by this input is paused are never drawn (nor is the line typed before the pause
    /// after it): pausing while typing a secret keeps it out.
    ///
    /// - Throws: ``ReelError/Code/invalidConfiguration`` when the input has no pictures or the
    ///   zoom factor is out of range.
    public func setPresenterOverlays(_ overlays: PresenterOverlays, events: any InputEventSource) throws {
        guard input.kind == .video else {
            throw ReelError(.invalidConfiguration, "\(input.name) has no pictures to draw on")
        }
        try overlays.validate()
        presenter.withLock { $0.overlays = overlays; $0.events = overlays.isEmpty ? nil : events }
    }

    /// Starts the input's event source for a run, on `clock`; the stage to draw with, or `nil`
    /// when there are no overlays. Keys pressed while one of `recorders` is paused (before its
    /// first frame too: a `--delay`) never go into the captions. `captionsToggled` is told when
    /// the hide chord hides (`true`) or shows the captions.
    func startPresenter(clock: any MediaClock, origin: MediaTime, recorders: [Recorder] = [],
                        captionsToggled: (@Sendable (Bool) -> Void)? = nil) throws -> PresenterStage? {
        let setting = presenter.withLock { $0 }
        guard let events = setting.events, !setting.overlays.isEmpty else { return nil }
        let log = InputEventLog()
        try events.start(clock: clock) { log.append($0) }
        presenter.withLock { $0.log = log }
        // Asked at every picture (a recorder's lock): only when there are keys to hide.
        let hidesKeys: (@Sendable (MediaTime) -> Bool)? = recorders.isEmpty || !setting.overlays.showsKeys ? nil : { @Sendable time in
            recorders.contains { $0.isPaused(atSessionTime: time) }
        }
        return PresenterStage(overlays: setting.overlays, log: log, origin: origin, realTime: clock.isRealTime, hidesKeys: hidesKeys,
                              captionsToggled: captionsToggled)
    }

    /// Stops the input's event source if a run started it.
    func stopPresenter() {
        let running = presenter.withLock { s -> (any InputEventSource)? in
            defer { s.log = nil }
            return s.log == nil ? nil : s.events
        }
        running?.stop()
    }
}
