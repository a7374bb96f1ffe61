import ReelCore

/// The system calls a V4L2 camera needs, as a seam: ``SystemV4L2Driver`` makes them through
/// ``Syscall``; ``V4L2ReplayDriver`` answers them from recordings of real cameras, so that the
/// discovery, negotiation and capture logic is tested on machines without a camera.
///
/// Each method is one `ioctl` (or `open`, `mmap`, `poll`…) in Swift types. Failures throw the
/// ``ReelError`` of ``Syscall/error(_:errno:hint:)`` with the `errno` set; the caller adds what
/// it was doing. The end of an enumeration (`EINVAL`) is `nil`, not an error.
package protocol V4L2Driver: Sendable {
    /// The paths of the video device nodes (`/dev/video*`), in numeric order.
    func devicePaths() -> [String]
    /// Whether a node exists at `path`.
    func exists(_ path: String) -> Bool
    /// Opens `path` for reading and writing, without blocking on `DQBUF`.
    func open(_ path: String) throws -> Int32
    /// Closes a descriptor from ``open(_:)``.
    func close(_ fd: Int32)
    /// `VIDIOC_QUERYCAP`.
    func queryCapabilities(_ fd: Int32) throws -> V4L2DeviceIdentity
    /// `VIDIOC_ENUM_FMT` for video capture: entry `index`, or `nil` past the last.
    func enumerateFormat(_ fd: Int32, index: Int) throws -> V4L2FormatEntry?
    /// `VIDIOC_ENUM_FRAMESIZES`: entry `index` for `fourCC`, or `nil` past the last.
    func enumerateFrameSize(_ fd: Int32, fourCC: V4L2FourCC, index: Int) throws -> V4L2FrameSizeEntry?
    /// `VIDIOC_ENUM_FRAMEINTERVALS`: entry `index` for `fourCC` at `size`, or `nil` past the last.
    func enumerateFrameInterval(_ fd: Int32, fourCC: V4L2FourCC, size: PixelSize, index: Int) throws -> V4L2FrameIntervalEntry?
    /// `VIDIOC_G_FMT` for video capture.
    func getFormat(_ fd: Int32) throws -> V4L2PixFormat
    /// `VIDIOC_S_FMT` for video capture; returns the format the driver chose (it may adjust).
    func setFormat(_ fd: Int32, fourCC: V4L2FourCC, size: PixelSize) throws -> V4L2PixFormat
    /// `VIDIOC_G_PARM` for video capture.
    func getStreamParameters(_ fd: Int32) throws -> V4L2StreamParameters
    /// `VIDIOC_S_PARM` with a time per frame; returns what the driver set.
    func setFrameInterval(_ fd: Int32, _ interval: V4L2Fraction) throws -> V4L2StreamParameters
    /// `VIDIOC_REQBUFS` for memory-mapped capture buffers; returns how many the driver made.
    func requestBuffers(_ fd: Int32, count: Int) throws -> Int
    /// `VIDIOC_QUERYBUF`: where buffer `index` is and how long it is.
    func queryBuffer(_ fd: Int32, index: Int) throws -> V4L2BufferLocation
    /// `mmap` of a buffer found by ``queryBuffer(_:index:)``.
    func map(_ fd: Int32, _ buffer: V4L2BufferLocation) throws -> UnsafeMutableRawPointer
    /// `munmap` of a mapping from ``map(_:_:)``.
    func unmap(_ pointer: UnsafeMutableRawPointer, length: Int)
    /// `VIDIOC_QBUF`: hands buffer `index` to the driver to fill.
    func queueBuffer(_ fd: Int32, index: Int) throws
    /// `VIDIOC_DQBUF`: a filled buffer, or `nil` when none is ready (`EAGAIN`).
    func dequeueBuffer(_ fd: Int32) throws -> V4L2FilledBuffer?
    /// `VIDIOC_STREAMON`.
    func streamOn(_ fd: Int32) throws
    /// `VIDIOC_STREAMOFF` (also returns every buffer to the application).
    func streamOff(_ fd: Int32) throws
    /// `poll` for a filled buffer, waiting at most `timeoutMilliseconds`.
    func waitForBuffer(_ fd: Int32, timeoutMilliseconds: Int) throws -> V4L2Readiness
    /// How the device at `path` is attached, as udev and sysfs say (not an ioctl).
    func attachment(of path: String) -> V4L2Attachment
}

/// How a video device is attached: its stable name and whether it is built in; `nil` for what
/// the system does not say.
package struct V4L2Attachment: Sendable, Hashable {
    /// The node's name in `/dev/v4l/by-id`.
    package var stableName: String?
    /// Whether the device is fixed in the machine rather than removable.
    package var isBuiltIn: Bool?

    /// An attachment; nothing known unless given.
    package init(stableName: String? = nil, isBuiltIn: Bool? = nil) {
        self.stableName = stableName
        self.isBuiltIn = isBuiltIn
    }
}

/// What `VIDIOC_QUERYCAP` says about a device.
package struct V4L2DeviceIdentity: Sendable, Hashable {
    package var driver: String
    package var card: String
    package var busInfo: String
    /// The capabilities of the physical device as a whole.
    package var capabilities: V4L2Capabilities
    /// The capabilities of this node, when the driver reports them (`V4L2_CAP_DEVICE_CAPS`).
    package var deviceCapabilities: V4L2Capabilities?

    package init(driver: String, card: String, busInfo: String, capabilities: V4L2Capabilities,
                 deviceCapabilities: V4L2Capabilities?) {
        self.driver = driver
        self.card = card
        self.busInfo = busInfo
        self.capabilities = capabilities
        self.deviceCapabilities = deviceCapabilities
    }

    /// The capabilities that apply to this node.
    package var effectiveCapabilities: V4L2Capabilities { deviceCapabilities ?? capabilities }
}

/// One answer of `VIDIOC_ENUM_FMT`.
package struct V4L2FormatEntry: Sendable, Hashable {
    package var fourCC: V4L2FourCC
    package var description: String
    package var isCompressed: Bool
    package var isEmulated: Bool

    package init(fourCC: V4L2FourCC, description: String, isCompressed: Bool, isEmulated: Bool = false) {
        self.fourCC = fourCC
        self.description = description
        self.isCompressed = isCompressed
        self.isEmulated = isEmulated
    }
}

/// One answer of `VIDIOC_ENUM_FRAMESIZES`.
package enum V4L2FrameSizeEntry: Sendable, Hashable {
    case discrete(PixelSize)
    /// Any size from `min` to `max` in steps of `step` (continuous: a step of 1x1).
    case stepwise(min: PixelSize, max: PixelSize, step: PixelSize)
}

/// One answer of `VIDIOC_ENUM_FRAMEINTERVALS`.
package enum V4L2FrameIntervalEntry: Sendable, Hashable {
    case discrete(V4L2Fraction)
    /// Any interval from `min` to `max` (seconds per frame).
    case stepwise(min: V4L2Fraction, max: V4L2Fraction, step: V4L2Fraction)
}

/// A `struct v4l2_fract`: `numerator / denominator` seconds per frame for a frame interval.
package struct V4L2Fraction: Sendable, Hashable, CustomStringConvertible {
    package var numerator: UInt32
    package var denominator: UInt32

    package init(_ numerator: UInt32, _ denominator: UInt32) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// The interval of frames at `rate`.
    package init(interval rate: FrameRate) {
        self.init(UInt32(rate.per), UInt32(rate.frames))
    }

    /// The frame rate of this interval, or `nil` for a zero or overflowing fraction.
    package var frameRate: FrameRate? {
        guard numerator > 0, denominator > 0 else { return nil }
        var a = denominator, b = numerator
        let g = gcd(a, b)
        a /= g; b /= g
        guard a <= UInt32(Int32.max), b <= UInt32(Int32.max) else { return nil }
        return FrameRate(Int32(a), per: Int32(b))
    }

    package var seconds: Double { denominator == 0 ? 0 : Double(numerator) / Double(denominator) }

    package var description: String { "\(numerator)/\(denominator)" }

    private func gcd(_ a: UInt32, _ b: UInt32) -> UInt32 { b == 0 ? max(a, 1) : gcd(b, a % b) }
}

/// The `pix` part of a `struct v4l2_format`.
package struct V4L2PixFormat: Sendable, Hashable {
    package var fourCC: V4L2FourCC
    package var size: PixelSize
    package var bytesPerLine: Int
    package var sizeImage: Int

    package init(fourCC: V4L2FourCC, size: PixelSize, bytesPerLine: Int, sizeImage: Int) {
        self.fourCC = fourCC
        self.size = size
        self.bytesPerLine = bytesPerLine
        self.sizeImage = sizeImage
    }
}

/// The capture part of a `struct v4l2_streamparm`.
package struct V4L2StreamParameters: Sendable, Hashable {
    /// Whether the driver lets the frame interval be set (`V4L2_CAP_TIMEPERFRAME`).
    package var canSetFrameInterval: Bool
    /// The time per frame, if the driver reports one.
    package var timePerFrame: V4L2Fraction?

    package init(canSetFrameInterval: Bool, timePerFrame: V4L2Fraction?) {
        self.canSetFrameInterval = canSetFrameInterval
        self.timePerFrame = timePerFrame
    }
}

/// Where a memory-mapped buffer lies (`VIDIOC_QUERYBUF`).
package struct V4L2BufferLocation: Sendable, Hashable {
    package var index: Int
    package var offset: Int
    package var length: Int

    package init(index: Int, offset: Int, length: Int) {
        self.index = index
        self.offset = offset
        self.length = length
    }
}

/// A filled buffer (`VIDIOC_DQBUF`).
package struct V4L2FilledBuffer: Sendable, Hashable {
    package var index: Int
    package var bytesUsed: Int
    /// The driver's frame counter (gaps mean frames the driver dropped).
    package var sequence: UInt32
    /// The driver's timestamp in nanoseconds.
    package var timestampNanoseconds: Int64
    /// `V4L2_BUF_FLAG_*`.
    package var flags: UInt32

    package init(index: Int, bytesUsed: Int, sequence: UInt32, timestampNanoseconds: Int64, flags: UInt32) {
        self.index = index
        self.bytesUsed = bytesUsed
        self.sequence = sequence
        self.timestampNanoseconds = timestampNanoseconds
        self.flags = flags
    }

    /// `V4L2_BUF_FLAG_ERROR`: the data may be damaged.
    package static let errorFlag: UInt32 = 0x0000_0040
    /// `V4L2_BUF_FLAG_TIMESTAMP_MASK`.
    package static let timestampMask: UInt32 = 0x0000_e000
    /// `V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC`: the timestamp is on `CLOCK_MONOTONIC`.
    package static let timestampMonotonic: UInt32 = 0x0000_2000
    /// `V4L2_BUF_FLAG_TIMESTAMP_COPY`: the timestamp was copied from elsewhere.
    package static let timestampCopy: UInt32 = 0x0000_4000

    /// Whether the timestamp is a `CLOCK_MONOTONIC` reading.
    package var hasMonotonicTimestamp: Bool { flags & Self.timestampMask == Self.timestampMonotonic }
    /// Whether the driver marked the data as damaged.
    package var isDamaged: Bool { flags & Self.errorFlag != 0 }
}

/// What `poll` found.
package enum V4L2Readiness: Sendable, Hashable {
    /// A buffer can be dequeued.
    case ready
    /// Nothing came within the timeout.
    case timedOut
    /// The device signalled an error (`POLLERR`, `POLLHUP`): it may be gone.
    case failed
}
