// DOCS-SNIPPET-BEGIN
import Foundation
import Observation
import Reel
import ReelPreview
import Synchronization

/// The SwiftUI camera app on Linux: the model its views bind to (its CameraManager,
/// FrameManager and ContentViewModel in one). The newest camera picture, filtered by the app
/// as its toggles say (the CIFilters it applied to each CGImage), and the camera's error for
/// the error view, which a preview window shows over the picture.
final class PortedCameraApp: Observable, Sendable {
    /// The filter toggles of the app's controls.
    struct Toggles: Sendable, Equatable {
        var comic = false, mono = false, crystal = false
    }
    private let registrar = ObservationRegistrar()
    private let state = Mutex<(toggles: Toggles, frame: LiveFrame?, error: ReelError?)>((Toggles(), nil, nil))
    let session = CaptureSession()                                  // AVCaptureSession()
    let preview: PreviewWindow?
    private let camera: CameraLocation?

    /// The app with `camera`, or the system's default camera (AVCaptureDevice.default(for: .video)).
    init(camera: CameraLocation? = nil, window: Bool) {
        self.camera = camera ?? CaptureDevice.default(for: .video).map { .device($0.address) }
        preview = window ? PreviewWindow(settings: .init(title: "Camera")) : nil
    }

    var toggles: Toggles {                                          // @Published comicFilter, monoFilter, crystalFilter
        get { registrar.access(self, keyPath: \.toggles); return state.withLock { $0.toggles } }
        set { registrar.withMutation(of: self, keyPath: \.toggles) { state.withLock { $0.toggles = newValue } } }
    }

    var frame: LiveFrame? {                                         // @Published var frame: CGImage?
        registrar.access(self, keyPath: \.frame)
        return state.withLock { $0.frame }
    }

    var error: ReelError? {                                         // @Published var error: CameraError?
        registrar.access(self, keyPath: \.error)
        return state.withLock { $0.error }
    }

    private func show(_ error: ReelError) {                         // ErrorView(error: model.error)
        registrar.withMutation(of: self, keyPath: \.error) { state.withLock { $0.error = error } }
        preview?.message = error.message + (error.hint.map { "\n\($0)" } ?? "")
    }

    /// CameraManager.configure(): permission, the session, and the frames for the view.
    func start() async {
        guard let camera else {                                     // CameraError.cameraUnavailable
            return show(ReelError(.sourceUnavailable, "there is no camera", hint: "plug one in"))
        }
        switch Cameras.authorizationStatus(for: camera) {            // checkPermissions()
        case .authorized: break
        case .denied(let hint): return show(ReelError(.permissionDenied, "the camera may not be used", hint: hint))
        case .busy: return show(ReelError(.busy, "another program is using the camera", hint: "close it and try again"))
        case .absent: return show(ReelError(.sourceUnavailable, "the camera is not there", hint: "plug it in"))  // no Apple case
        }
        do {
            let source = try Cameras.source(for: camera, size: PixelSize(width: 1280, height: 720))
            try session.addInput(source)                            // AVCaptureDeviceInput(device:)
            if let mirror = session.connection(for: source) {       // videoOutput.connection(with: .video)
                mirror.isVideoMirrored = true                       // isVideoMirrored = true
            }
            let frames = LiveFrames()                               // AVCaptureVideoDataOutput + FrameManager
            let stream = frames.frames(.init(format: .bgra, size: PixelSize(width: 640, height: 360)))
            try session.addOutput(frames)
            if let preview { try session.addOutput(preview) }
            try await session.start()                               // session.startRunning()
            Task { for await frame in stream { self.received(frame) } }
            Task { for await event in session.events { if case .sourceLost(_, let error) = event { self.show(error) } } }
        } catch let error as ReelError {
            show(error)                                             // CameraError.cannotAddInput…
        } catch {
            show(ReelError(.sourceUnavailable, "\(error)"))
        }
    }

    /// captureOutput(_:didOutput:from:) and the view model's filtering: CIFilter.comicEffect(),
    /// .colorMonochrome(), .crystallize() on each picture the view shows.
    private func received(_ picture: LiveFrame) {
        let on = toggles
        var filters: [VideoFilter] = []
        if on.comic { filters.append(.look(.comic)) }
        if on.mono { filters.append(.look(.mono)) }
        if on.crystal { filters.append(.look(.crystal)) }
        let shown = (try? filters.apply(to: picture)) ?? picture    // filter.outputImage
        registrar.withMutation(of: self, keyPath: \.frame) { state.withLock { $0.frame = shown } }
    }

    func stop() async { await session.stop() }                      // session.stopRunning()
}
// DOCS-SNIPPET-END
