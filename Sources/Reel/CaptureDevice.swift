import Foundation

/// A camera or a microphone of this machine, as `AVCaptureDevice` describes one: a stable
/// ``uniqueID``, a ``localizedName``, its ``formats`` and its ``position``; found with
/// ``devices(for:audioServer:)`` (`AVCaptureDevice.DiscoverySession`) or
/// ``default(for:audioServer:)``, opened with ``makeCameraSource(size:frameRate:)`` or
/// ``makeMicrophoneSource()`` (`AVCaptureDeviceInput`).
///
/// ```swift
/// for camera in CaptureDevice.devices(for: .video) {
///     print(camera.localizedName, camera.uniqueID, camera.formats.count, "formats")
/// }
/// if let microphone = CaptureDevice.default(for: .audio), microphone.authorizationStatus == .authorized {
///     try session.addInput(microphone.makeMicrophoneSource())
/// }
/// ```
///
/// Cameras are the V4L2 capture nodes (`/dev/video*`); microphones the audio server's sources
/// that are not the monitors of its outputs. Linux asks the user nothing before a device is
/// used: ``authorizationStatus`` says whether it can be opened now.
public struct CaptureDevice: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// What a device captures (`AVMediaType`).
    public enum MediaType: String, Sendable, Hashable {
        /// Pictures: a camera.
        case video
        /// Sound: a microphone.
        case audio
    }

    /// Where a camera is (`AVCaptureDevice.Position`). Linux does not say which way a camera
    /// faces; it says whether the camera is built into the machine. A built-in camera — a
    /// laptop's, in the lid — faces the user, and is ``front``. Every other camera (USB,
    /// network) and every microphone is ``unspecified``; none is ``back``.
    public enum Position: String, Sendable, Hashable {
        /// Not known: an external camera, a microphone.
        case unspecified
        /// Built in, facing the user.
        case front
        /// Facing away from the user (no Linux camera says so).
        case back
    }

    /// A range of frame rates a format offers (`AVFrameRateRange`); a rate offered alone is a
    /// range of one.
    public struct FrameRateRange: Sendable, Hashable {
        /// The slowest rate.
        public var minFrameRate: FrameRate
        /// The fastest rate.
        public var maxFrameRate: FrameRate
    }

    /// One way the device can deliver (`AVCaptureDevice.Format`): for a camera a pixel format
    /// at one size with its frame rates, for a microphone its sample rate and channels.
    public struct Format: Sendable, Hashable, CustomStringConvertible {
        /// The pixel format's FourCC (`MJPG`, `YUYV`…) for a camera; `PCM` for a microphone.
        public var mediaSubType: String
        /// Whether the camera sends it compressed (MJPEG), which Reel decodes.
        public var isCompressed: Bool
        /// The picture size (for a camera that offers a range of sizes, the largest).
        public var dimensions: PixelSize?
        /// The frame rates at that size, fastest first.
        public var videoSupportedFrameRateRanges: [FrameRateRange]
        /// The sample rate of a microphone's sound.
        public var sampleRate: Int?
        /// The channels of a microphone's sound.
        public var channels: Int?

        /// "MJPG 1280x720 30, 15 fps" or "PCM 48000 Hz 2 ch".
        public var description: String {
            if let dimensions {
                let rates = videoSupportedFrameRateRanges.map {
                    $0.minFrameRate == $0.maxFrameRate ? V4L2FrameRates.format($0.maxFrameRate)
                        : "\(V4L2FrameRates.format($0.minFrameRate))-\(V4L2FrameRates.format($0.maxFrameRate))"
                }
                return "\(mediaSubType) \(dimensions) \(rates.joined(separator: ", ")) fps"
            }
            return "\(mediaSubType) \(sampleRate ?? 0) Hz \(channels ?? 0) ch"
        }
    }

    /// An identifier that stays the same for this device across unplugging, reboots and other
    /// devices coming and going: for a camera its `/dev/v4l/by-id` name (model and serial
    /// number), else its driver, bus position and name; for a microphone the audio server's
    /// source name. Find the device again with ``device(withUniqueID:audioServer:)``.
    public var uniqueID: String
    /// The device's name for people ("HD Pro Webcam C920", "Built-in Audio Analog Stereo").
    public var localizedName: String
    /// What the device captures.
    public var mediaType: MediaType
    /// Where the device is (see ``Position``).
    public var position: Position
    /// The ways the device can deliver, in the driver's order.
    public var formats: [Format]
    /// Whether this is the system's default device of its type: the audio server's default
    /// source, or the first camera.
    public var isDefault: Bool
    /// What opens it: a camera's device node (`/dev/video0`), a microphone's source name.
    public var address: String

    /// ``uniqueID``.
    public var id: String { uniqueID }

    /// "HD Pro Webcam C920 (/dev/video0)".
    public var description: String { "\(localizedName) (\(address))" }

    /// A device's description; each argument is the property of the same name.
    public init(uniqueID: String, localizedName: String, mediaType: MediaType, position: Position = .unspecified,
                formats: [Format] = [], isDefault: Bool = false, address: String) {
        self.uniqueID = uniqueID
        self.localizedName = localizedName
        self.mediaType = mediaType
        self.position = position
        self.formats = formats
        self.isDefault = isDefault
        self.address = address
    }
}

extension CaptureDevice {
    /// The devices of `mediaType` on this machine (`AVCaptureDevice.DiscoverySession`'s
    /// `devices`): cameras in the order of their nodes, microphones in the audio server's
    /// order. Devices that cannot be opened or queried now are left out; an audio server that
    /// does not answer has no microphones. `audioServer`: a PulseAudio server string, `nil`
    /// for the usual one.
    public static func devices(for mediaType: MediaType, audioServer: String? = nil) -> [CaptureDevice] {
        switch mediaType {
        case .video: return cameras(V4L2Devices.list().cameras)
        case .audio: return microphones((try? PulseAudioDevices.list(server: audioServer).sources) ?? [], server: audioServer)
        }
    }

    /// The default device of `mediaType` (`AVCaptureDevice.default(for:)`): the audio server's
    /// default source, or the first camera; `nil` when there is none.
    public static func `default`(for mediaType: MediaType, audioServer: String? = nil) -> CaptureDevice? {
        let all = devices(for: mediaType, audioServer: audioServer)
        return all.first(where: \.isDefault) ?? all.first
    }

    /// The device with `uniqueID` (`AVCaptureDevice(uniqueID:)`), wherever it is plugged in
    /// now; `nil` when it is not there.
    public static func device(withUniqueID uniqueID: String, audioServer: String? = nil) -> CaptureDevice? {
        let mediaType: MediaType = uniqueID.hasPrefix("pulse:") ? .audio : .video
        return devices(for: mediaType, audioServer: audioServer).first { $0.uniqueID == uniqueID }
    }

    /// Whether this process may use the default device of `mediaType`
    /// (`AVCaptureDevice.authorizationStatus(for:)`): for video the first camera node, for
    /// audio the audio server's default source.
    public static func authorizationStatus(for mediaType: MediaType, audioServer: String? = nil) -> AuthorizationStatus {
        switch mediaType {
        case .video:
            let first = V4L2Devices.list().cameras.first?.path ?? "/dev/video0"
            return V4L2Devices.authorizationStatus(forCamera: first)
        case .audio:
            return PulseAudioDevices.authorizationStatus(forSource: nil, server: audioServer)
        }
    }

    /// `AVCaptureDevice.requestAccess(for:)`: Linux shows no prompt, so this answers at once
    /// whether ``authorizationStatus(for:audioServer:)`` is `.authorized`.
    public static func requestAccess(for mediaType: MediaType, audioServer: String? = nil) async -> Bool {
        authorizationStatus(for: mediaType, audioServer: audioServer) == .authorized
    }

    /// Whether this process may use this device now (see ``AuthorizationStatus``).
    public var authorizationStatus: AuthorizationStatus {
        switch mediaType {
        case .video: return V4L2Devices.authorizationStatus(forCamera: address)
        case .audio: return PulseAudioDevices.authorizationStatus(forSource: address, server: audioServer)
        }
    }

    /// A camera source for this camera (`AVCaptureDeviceInput`), asking for `size` and
    /// `frameRate` (the camera picks its closest mode; see ``Cameras/source(for:size:frameRate:)``).
    ///
    /// - Throws: `.invalidConfiguration` for a microphone.
    public func makeCameraSource(size: PixelSize? = nil, frameRate: FrameRate = FrameRate(30)) throws -> any CameraSource {
        guard mediaType == .video else {
            throw ReelError(.invalidConfiguration, "\(localizedName) is a microphone, not a camera", hint: "use makeMicrophoneSource()")
        }
        return try Cameras.source(for: .device(address), size: size, frameRate: frameRate)
    }

    /// A source of this microphone's sound (`AVCaptureDeviceInput`), from the audio server it
    /// was found on.
    ///
    /// - Throws: `.invalidConfiguration` for a camera.
    public func makeMicrophoneSource() throws -> PulseAudioSource {
        guard mediaType == .audio else {
            throw ReelError(.invalidConfiguration, "\(localizedName) is a camera, not a microphone", hint: "use makeCameraSource()")
        }
        return PulseAudioSource.microphone(source: address, server: audioServer)
    }

    /// The audio server a microphone was found on (in its unique ID: `pulse:SERVER|SOURCE` when
    /// not the usual server).
    private var audioServer: String? {
        guard mediaType == .audio, let bar = uniqueID.firstIndex(of: "|") else { return nil }
        return String(uniqueID[uniqueID.index(uniqueID.startIndex, offsetBy: 6)..<bar])
    }

    // MARK: From the system's descriptions

    /// Cameras from V4L2 descriptions (the first is the default).
    package static func cameras(_ nodes: [V4L2Device]) -> [CaptureDevice] {
        nodes.enumerated().map { index, node in
            let unique = node.stableName.map { "v4l2:\($0)" } ?? "v4l2:\(node.driver):\(node.bus):\(node.card)"
            var formats: [Format] = []
            for format in node.formats {
                for size in format.frameSizes {
                    let dimensions: PixelSize
                    switch size.extent {
                    case .discrete(let s): dimensions = s
                    case .stepwise(_, let max, _): dimensions = max
                    }
                    let ranges: [FrameRateRange]
                    switch size.frameRates {
                    case .discrete(let rates): ranges = rates.map { FrameRateRange(minFrameRate: $0, maxFrameRate: $0) }
                    case let .range(slowest, fastest): ranges = [FrameRateRange(minFrameRate: slowest, maxFrameRate: fastest)]
                    }
                    formats.append(Format(mediaSubType: format.fourCC.description, isCompressed: format.isCompressed,
                                          dimensions: dimensions, videoSupportedFrameRateRanges: ranges))
                }
            }
            return CaptureDevice(uniqueID: unique, localizedName: node.card, mediaType: .video,
                                 position: node.isBuiltIn == true ? .front : .unspecified, formats: formats,
                                 isDefault: index == 0, address: node.path)
        }
    }

    /// Microphones from the audio server's sources (monitors left out), found on `server`.
    package static func microphones(_ sources: [AudioDevice], server: String? = nil) -> [CaptureDevice] {
        sources.filter { !$0.isMonitor }.map { source in
            CaptureDevice(uniqueID: server.map { "pulse:\($0)|\(source.name)" } ?? "pulse:\(source.name)",
                          localizedName: source.description.isEmpty ? source.name : source.description, mediaType: .audio,
                          formats: [Format(mediaSubType: "PCM", isCompressed: false, dimensions: nil, videoSupportedFrameRateRanges: [],
                                           sampleRate: source.sampleRate, channels: source.channels)],
                          isDefault: source.isDefault, address: source.name)
        }
    }
}
