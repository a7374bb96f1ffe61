import Foundation
import Testing
import Reel
import ReelTestSupport

/// Cameras and microphones as `AVCaptureDevice` values: cameras from recorded V4L2 answers
/// (two C920s and an 8MP camera, one built in), microphones from a real PulseAudio server.
@Suite struct CaptureDeviceTests {
    func replay(_ devices: [String: String]) throws -> V4L2ReplayDriver {
        V4L2ReplayDriver(devices: try devices.mapValues { try V4L2Recording(parsing: $0) })
    }

    @Test func camerasHaveStableIDsNamesFormatsAndAPosition() throws {
        let driver = try replay(["/dev/video0": CameraRecordings.logitechC920, "/dev/video1": CameraRecordings.uvcMetadataNode,
                                 "/dev/video2": CameraRecordings.eightMegapixelMJPEG])
        driver.attachments = [
            "/dev/video0": V4L2Attachment(stableName: "usb-046d_HD_Pro_Webcam_C920_1A2B3C4D-video-index0", isBuiltIn: false),
            "/dev/video2": V4L2Attachment(isBuiltIn: true),
        ]
        let cameras = CaptureDevice.cameras(V4L2Devices.list(driver: driver).cameras)
        #expect(cameras.map(\.address) == ["/dev/video0", "/dev/video2"], "the metadata node is no camera")
        let c920 = try #require(cameras.first)
        #expect(c920.uniqueID == "v4l2:usb-046d_HD_Pro_Webcam_C920_1A2B3C4D-video-index0", "the by-id name, whatever the node")
        #expect(c920.localizedName == "HD Pro Webcam C920")
        #expect(c920.mediaType == .video && c920.isDefault && c920.position == .unspecified)
        let mjpeg720 = try #require(c920.formats.first { $0.mediaSubType == "MJPG" && $0.dimensions == PixelSize(width: 1280, height: 720) })
        #expect(mjpeg720.isCompressed)
        #expect(mjpeg720.videoSupportedFrameRateRanges.first?.maxFrameRate == FrameRate(30))
        #expect(c920.formats.contains { $0.mediaSubType == "YUYV" && !$0.isCompressed })

        let builtIn = cameras[1]
        #expect(builtIn.position == .front, "a camera fixed in the machine faces the user")
        #expect(builtIn.uniqueID == "v4l2:uvcvideo:usb-0000:00:14.0-3:8MP USB Camera: 8MP USB Camera", "no by-id name: driver, bus, name")
        #expect(!builtIn.isDefault)

        // Found again by its unique ID at another node.
        let moved = try replay(["/dev/video4": CameraRecordings.logitechC920])
        moved.attachments = ["/dev/video4": V4L2Attachment(stableName: "usb-046d_HD_Pro_Webcam_C920_1A2B3C4D-video-index0")]
        #expect(CaptureDevice.cameras(V4L2Devices.list(driver: moved).cameras).first { $0.uniqueID == c920.uniqueID }?.address == "/dev/video4")
        #expect(throws: ReelError.self) { _ = try c920.makeMicrophoneSource() }
    }
}

/// Microphones and their authorization on a real PulseAudio server.
@Suite(.tags(.realTime)) struct MicrophoneDeviceTests {
    @Test func microphonesAndTheirAuthorization() throws {
        let pulse = try PulseServer()
        let microphones = CaptureDevice.devices(for: .audio, audioServer: pulse.server)
        let microphone = try #require(CaptureDevice.default(for: .audio, audioServer: pulse.server), "\(microphones)")
        #expect(microphone.mediaType == .audio && microphone.isDefault && microphone.position == .unspecified)
        #expect(microphone.formats.first?.sampleRate ?? 0 > 0)
        #expect(!microphone.localizedName.isEmpty)
        #expect(!microphones.contains { $0.address.hasSuffix(".monitor") }, "monitors of outputs are not microphones")
        #expect(CaptureDevice.device(withUniqueID: microphone.uniqueID, audioServer: pulse.server) == microphone)
        #expect(microphone.authorizationStatus == .authorized)
        #expect(CaptureDevice.authorizationStatus(for: .audio, audioServer: pulse.server) == .authorized)
        #expect(PulseAudioDevices.authorizationStatus(forSource: "no-such-source", server: pulse.server) == .absent)
        #expect(CaptureDevice.authorizationStatus(for: .audio, audioServer: "unix:/nonexistent/pulse/native") == .absent)
        #expect(CaptureDevice.devices(for: .audio, audioServer: "unix:/nonexistent/pulse/native").isEmpty)
        let source = try microphone.makeMicrophoneSource()
        #expect(source.sourceName == microphone.address && source.server == pulse.server)
        #expect(throws: ReelError.self) { _ = try microphone.makeCameraSource() }
    }
}
