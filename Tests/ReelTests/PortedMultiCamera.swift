// DOCS-SNIPPET-BEGIN
import Foundation
import Reel

/// The ReplayKit multi-camera recorder on Linux: the screen with the cameras beside it in one
/// recording (ReplayKit's camera overlay, AVCaptureMultiCamSession's several cameras), a
/// built-in (front) camera mirrored as a selfie view, and each camera also in a file of its own.
final class PortedMultiCamera: Sendable {
    let session = CaptureSession()                                  // AVCaptureMultiCamSession()
    let recorder: Recorder
    let compositor = Compositor(settings: .init(size: PixelSize(width: 1280, height: 720), layout: .grid))

    /// The cameras of this machine and the default microphone, found as
    /// AVCaptureDevice.DiscoverySession finds them.
    convenience init(screen: (any CaptureSource)?, movie: URL, folder: URL) throws {
        let devices = CaptureDevice.devices(for: .video)            // DiscoverySession(...).devices
        guard !devices.isEmpty else {
            throw ReelError(.sourceUnavailable, "there is no camera", hint: "plug one in, or use the test camera")
        }
        let cameras = try devices.prefix(2).map { try $0.makeCameraSource(size: PixelSize(width: 1280, height: 720)) }
        let microphone = try CaptureDevice.default(for: .audio)?.makeMicrophoneSource()   // AVCaptureDevice.default(for: .audio)
        try self.init(screen: screen, cameras: Array(zip(cameras, devices.map(\.position))), microphone: microphone,
                      movie: movie, folder: folder)
    }

    init(screen: (any CaptureSource)?, cameras: [(source: any CameraSource, position: CaptureDevice.Position)],
         microphone: (any CaptureSource)?, movie: URL, folder: URL) throws {
        if let screen { try session.addInput(screen) }              // RPScreenRecorder: the screen
        for (index, camera) in cameras.enumerated() {
            guard session.canAddInput(camera.source) else { continue }      // canAddInput(_:)
            try session.addInput(camera.source)                     // addInputWithNoConnections(_:)
            guard let connection = session.connection(for: camera.source) else { continue }  // its AVCaptureConnection
            connection.isVideoMirrored = camera.position == .front  // isVideoMirrored for the front camera
            connection.videoOrientation = .upright                  // videoOrientation = .portrait
            let own = Recorder(url: folder.appendingPathComponent("camera-\(index + 1).mp4"))
            try session.addOutput(own, connectedTo: [camera.source])  // a movie file output per camera
        }
        if let microphone { try session.addInput(microphone) }
        recorder = Recorder(url: movie)                             // startRecording(handler:)
        try compositor.addOutput(recorder)
        try session.addOutput(compositor)
    }

    func start() async throws { try await session.start() }        // startRunning(), startRecording
    func swapCameras() { compositor.swap() }                        // which picture is large

    /// stopRecording(withOutput:) and stopRunning(): the files are finalised.
    func stop() async throws -> RecordingSummary {
        await session.stop()
        return try await recorder.result()
    }
}
// DOCS-SNIPPET-END
