import Foundation
import Reel
import ReelPreview

/// What the keys of `reel record` do, alike on a terminal (``KeyControls``) and in the preview
/// window: `f` steps the picture through the looks, `m` puts a marker (or says why the file
/// can hold none), space pauses and resumes (or, before a scheduled start, says when recording
/// begins: the wait is not a pause).
struct RecordKeyActions: Sendable {
    /// `f`; `nil` without a picture.
    let cycleFilter: (@Sendable () -> Void)?
    /// `m`.
    let mark: @Sendable () -> Void
    /// Space (and `r` without `--replay` in the preview).
    let togglePause: @Sendable () -> Void

    /// `ownFilter` is the user's own `--filter` for `picture`, which the looks go on top of
    /// (see ``KeyControls/looks(after:own:)``); `waitingUntilStart` the seconds before a scheduled start (`nil` once begun).
    init(recorder: Recorder, session: CaptureSession, compositor: Compositor?, picture: (any CaptureSource)?, ownFilter: VideoFilter?,
         renderer: ProgressRenderer, waitingUntilStart: (@Sendable () -> Double?)?) {
        if let picture {
            cycleFilter = {
                let connection = session.connection(for: picture)
                let next = KeyControls.looks(after: compositor?.videoFilters ?? connection?.videoFilters ?? [], own: ownFilter)
                do {
                    if let compositor { try compositor.setVideoFilters(next) } else { try connection?.setVideoFilters(next) }
                    renderer.note("filter: \(KeyControls.describe(next))")
                } catch let error as ReelError {
                    renderer.note(CommandLineHints.rephrased(error).description)
                } catch {}
            }
        } else {
            cycleFilter = nil
        }
        // The placed marker is said by its event; a file that has no place for one says so.
        mark = {
            if let left = waitingUntilStart?() { return renderer.note(Self.notYet(left)) }
            do { try recorder.addMarker() } catch let error as ReelError { renderer.note(CommandLineHints.rephrased(error).description) } catch {}
        }
        togglePause = {
            if let left = waitingUntilStart?() {
                renderer.note(Self.notYet(left))
            } else {
                try? recorder.togglePause()
            }
        }
    }

    /// What pausing or resuming before a scheduled start answers.
    static func notYet(_ left: Double) -> String {
        "not recording yet; it starts in " + RecordSchedule.timeLeft(left)
    }

    /// Hands the preview window's keys to these actions: `r` saves the replay with `--replay`
    /// (else pauses), `s` swaps, `z`/`Z` zoom `cameras`, stop keys call `stop`.
    func attach(to preview: PreviewWindow, cameras: [any CameraSource], compositor: Compositor?,
                saveReplay: (@Sendable () -> Void)?, stop: @escaping @Sendable () -> Void) {
        let actions = self
        preview.onKey = { key in
            switch key {
            case .pause: actions.togglePause()
            case .record: if let saveReplay { saveReplay() } else { actions.togglePause() }
            case .stop: stop()
            case .swap: compositor?.swap()
            case .filter: actions.cycleFilter?()
            case .marker: actions.mark()
            case .zoomIn, .zoomOut:
                for camera in cameras {
                    let factor = camera.videoZoomFactor * (key == .zoomIn ? 2.0.squareRoot() : 1 / 2.0.squareRoot())
                    camera.ramp(toVideoZoomFactor: min(ZoomControl.maximumFactor, max(1, factor)), withRate: 2)
                }
            }
        }
    }
}
