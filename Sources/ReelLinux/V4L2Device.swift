import ReelCore

/// A V4L2 camera as its driver describes it: names, capabilities and every format with its
/// frame sizes and frame rates. ``V4L2Devices/list()`` finds them.
public struct V4L2Device: Sendable, Hashable {
    /// The device node, e.g. `/dev/video0`.
    public var path: String
    /// The camera's name ("HD Pro Webcam C920").
    public var card: String
    /// The kernel driver ("uvcvideo").
    public var driver: String
    /// Where the device is attached ("usb-0000:00:14.0-1").
    public var bus: String
    /// What this node can do.
    public var capabilities: V4L2Capabilities
    /// The formats the camera offers, in the driver's order.
    public var formats: [V4L2Format]
    /// The name udev gives the node in `/dev/v4l/by-id` (the camera's model and serial
    /// number: the same whichever port it is plugged into and whatever `/dev/videoN` it gets),
    /// if it has one.
    public var stableName: String?
    /// Whether the camera is built into the machine (a fixed, not removable, device: a laptop's
    /// camera); `nil` when the kernel does not say.
    public var isBuiltIn: Bool?

    /// Creates a description.
    public init(path: String, card: String, driver: String, bus: String, capabilities: V4L2Capabilities, formats: [V4L2Format],
                stableName: String? = nil, isBuiltIn: Bool? = nil) {
        self.path = path
        self.card = card
        self.driver = driver
        self.bus = bus
        self.capabilities = capabilities
        self.formats = formats
        self.stableName = stableName
        self.isBuiltIn = isBuiltIn
    }

    /// Whether the node captures video with streaming I/O, which Reel needs.
    public var isCamera: Bool { capabilities.isSuperset(of: [.videoCapture, .streaming]) }

    /// The format with `fourCC`, if the camera offers it.
    public func format(_ fourCC: V4L2FourCC) -> V4L2Format? { formats.first { $0.fourCC == fourCC } }
}

/// One pixel format of a camera, with the sizes and rates it comes in.
public struct V4L2Format: Sendable, Hashable {
    /// The format's code (`YUYV`, `MJPG`, `NV12`, `H264`…).
    public var fourCC: V4L2FourCC
    /// The driver's name for it ("YUYV 4:2:2", "Motion-JPEG").
    public var description: String
    /// Whether frames are compressed.
    public var isCompressed: Bool
    /// The sizes, each with its frame rates.
    public var frameSizes: [V4L2FrameSize]

    /// Creates a format description.
    public init(fourCC: V4L2FourCC, description: String, isCompressed: Bool, frameSizes: [V4L2FrameSize]) {
        self.fourCC = fourCC
        self.description = description
        self.isCompressed = isCompressed
        self.frameSizes = frameSizes
    }
}

/// A frame size (or a range of them) and the frame rates offered at it.
public struct V4L2FrameSize: Sendable, Hashable, CustomStringConvertible {
    /// The sizes this entry stands for.
    public enum Extent: Sendable, Hashable {
        /// One size.
        case discrete(PixelSize)
        /// Every size from `min` to `max` in steps of `step`.
        case stepwise(min: PixelSize, max: PixelSize, step: PixelSize)
    }
    /// The size or sizes.
    public var extent: Extent
    /// The frame rates at this size (for a range of sizes: those at its largest size).
    public var frameRates: V4L2FrameRates

    /// Creates a frame-size entry.
    public init(_ extent: Extent, frameRates: V4L2FrameRates) {
        self.extent = extent
        self.frameRates = frameRates
    }

    /// The size in this entry closest to `size`: the size itself for a discrete entry, else
    /// `size` clamped into the range and rounded to its step.
    public func closestSize(to size: PixelSize) -> PixelSize {
        switch extent {
        case .discrete(let s): return s
        case let .stepwise(min, max, step):
            func fit(_ v: Int, _ lo: Int, _ hi: Int, _ step: Int) -> Int {
                let clamped = Swift.min(Swift.max(v, lo), hi)
                let s = Swift.max(step, 1)
                let snapped = lo + ((clamped - lo) + s / 2) / s * s
                return snapped > hi ? snapped - s : snapped
            }
            return PixelSize(width: fit(size.width, min.width, max.width, step.width),
                             height: fit(size.height, min.height, max.height, step.height))
        }
    }

    /// "640x480" or "16x16-1920x1080 step 2x2".
    public var description: String {
        switch extent {
        case .discrete(let s): return s.description
        case let .stepwise(min, max, step):
            return step.width <= 1 && step.height <= 1 ? "\(min)-\(max)" : "\(min)-\(max) step \(step)"
        }
    }
}

/// The frame rates a camera offers at one size.
public enum V4L2FrameRates: Sendable, Hashable, CustomStringConvertible {
    /// A list of rates, fastest first as drivers list them.
    case discrete([FrameRate])
    /// Any rate from `slowest` to `fastest`.
    case range(slowest: FrameRate, fastest: FrameRate)

    /// The rate offered closest to `rate` (by ratio; between equally close, the faster).
    public func closest(to rate: FrameRate) -> FrameRate? {
        switch self {
        case .discrete(let rates):
            return rates.min { a, b in
                let da = V4L2Negotiation.distance(a.framesPerSecond, rate.framesPerSecond)
                let db = V4L2Negotiation.distance(b.framesPerSecond, rate.framesPerSecond)
                return da != db ? da < db : a.framesPerSecond > b.framesPerSecond
            }
        case let .range(slowest, fastest):
            if rate.framesPerSecond < slowest.framesPerSecond { return slowest }
            if rate.framesPerSecond > fastest.framesPerSecond { return fastest }
            return rate
        }
    }

    /// The fastest rate offered.
    public var fastest: FrameRate? {
        switch self {
        case .discrete(let rates): return rates.max { $0.framesPerSecond < $1.framesPerSecond }
        case .range(_, let fastest): return fastest
        }
    }

    /// "30, 24, 15, 7.5 fps" or "1-30 fps".
    public var description: String {
        switch self {
        case .discrete(let rates):
            return rates.isEmpty ? "no rate given" : rates.map(Self.format).joined(separator: ", ") + " fps"
        case let .range(slowest, fastest):
            return "\(Self.format(slowest))-\(Self.format(fastest)) fps"
        }
    }

    /// A rate as people write it: "30", "7.5", "29.97".
    public static func format(_ rate: FrameRate) -> String {
        if rate.per == 1 { return "\(rate.frames)" }
        var text = String(Int((rate.framesPerSecond * 1000).rounded()))
        while text.count < 4 { text = "0" + text }
        text.insert(".", at: text.index(text.endIndex, offsetBy: -3))
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }
}

extension V4L2Device {
    /// Reads a device's description through `driver` from an open descriptor.
    package static func describe(path: String, fd: Int32, identity: V4L2DeviceIdentity,
                                 driver: any V4L2Driver) throws -> V4L2Device {
        var formats: [V4L2Format] = []
        var index = 0
        while let entry = try driver.enumerateFormat(fd, index: index), index < 256 {
            index += 1
            var sizes: [V4L2FrameSize] = []
            var sizeIndex = 0
            while let size = try driver.enumerateFrameSize(fd, fourCC: entry.fourCC, index: sizeIndex), sizeIndex < 1024 {
                sizeIndex += 1
                switch size {
                case .discrete(let s):
                    sizes.append(V4L2FrameSize(.discrete(s), frameRates: try rates(fd: fd, fourCC: entry.fourCC, size: s, driver: driver)))
                case let .stepwise(min, max, step):
                    sizes.append(V4L2FrameSize(.stepwise(min: min, max: max, step: step),
                                               frameRates: try rates(fd: fd, fourCC: entry.fourCC, size: max, driver: driver)))
                }
                if case .stepwise = size { break }
            }
            formats.append(V4L2Format(fourCC: entry.fourCC, description: entry.description,
                                      isCompressed: entry.isCompressed, frameSizes: sizes))
        }
        let attachment = driver.attachment(of: path)
        return V4L2Device(path: path, card: identity.card, driver: identity.driver, bus: identity.busInfo,
                          capabilities: identity.effectiveCapabilities, formats: formats,
                          stableName: attachment.stableName, isBuiltIn: attachment.isBuiltIn)
    }

    private static func rates(fd: Int32, fourCC: V4L2FourCC, size: PixelSize, driver: any V4L2Driver) throws -> V4L2FrameRates {
        var rates: [FrameRate] = []
        var index = 0
        while let entry = try driver.enumerateFrameInterval(fd, fourCC: fourCC, size: size, index: index), index < 256 {
            index += 1
            switch entry {
            case .discrete(let interval):
                if let rate = interval.frameRate, !rates.contains(rate) { rates.append(rate) }
            case let .stepwise(min, max, _):
                // The shortest interval is the fastest rate.
                if let fastest = min.frameRate, let slowest = max.frameRate {
                    return .range(slowest: slowest, fastest: fastest)
                }
            }
        }
        return .discrete(rates)
    }
}
