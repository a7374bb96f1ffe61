#if canImport(Glibc)
import Glibc
#endif
import Foundation
internal import CV4L2
import ReelCore
import ReelSystem

/// The real V4L2 driver: every call an `ioctl` (or `open`, `mmap`, `poll`) through ``Syscall``.
package struct SystemV4L2Driver: V4L2Driver {
    package init() {}

    package func devicePaths() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? []
        return names.compactMap { name -> (Int, String)? in
            guard name.hasPrefix("video"), let n = Int(name.dropFirst(5)) else { return nil }
            return (n, "/dev/" + name)
        }.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// The `/dev/v4l/by-id` link that leads to `path`, and the `removable` attribute sysfs
    /// gives the device or the nearest of its parents (`fixed`: built in).
    package func attachment(of path: String) -> V4L2Attachment {
        let node = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let links = "/dev/v4l/by-id"
        let stableName = ((try? FileManager.default.contentsOfDirectory(atPath: links)) ?? []).sorted().first { name in
            URL(fileURLWithPath: "\(links)/\(name)").resolvingSymlinksInPath().path == node
        }
        var isBuiltIn: Bool?
        var device = URL(fileURLWithPath: "/sys/class/video4linux/\((node as NSString).lastPathComponent)/device").resolvingSymlinksInPath()
        while device.path.hasPrefix("/sys/devices/") {
            if let text = try? String(contentsOfFile: device.appendingPathComponent("removable").path, encoding: .utf8) {
                switch text.trimmingCharacters(in: .whitespacesAndNewlines) {
                case "fixed": isBuiltIn = true
                case "removable": isBuiltIn = false
                default: break
                }
                if isBuiltIn != nil { break }
            }
            device = device.deletingLastPathComponent()
        }
        return V4L2Attachment(stableName: stableName, isBuiltIn: isBuiltIn)
    }

    package func exists(_ path: String) -> Bool {
        var info = stat()
        return (try? Syscall.call("looking up \(path)") { stat(path, &info) }) != nil
    }

    package func open(_ path: String) throws -> Int32 {
        try Syscall.call("opening \(path)") { Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC) }
    }

    package func close(_ fd: Int32) { Syscall.close(fd) }

    private func ioctl<T>(_ fd: Int32, _ request: UInt, _ name: String, _ value: inout T) throws {
        _ = try withUnsafeMutablePointer(to: &value) { p in try Syscall.call(name) { reel_v4l2_ioctl(fd, request, UnsafeMutableRawPointer(p)) } }
    }

    /// Runs an enumerating ioctl; `EINVAL` marks the end of the list.
    private func enumerate<T>(_ fd: Int32, _ request: UInt, _ name: String, _ value: inout T) throws -> Bool {
        do {
            try ioctl(fd, request, name, &value)
            return true
        } catch let error as ReelError where error.errno == EINVAL {
            return false
        }
    }

    private static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    package func queryCapabilities(_ fd: Int32) throws -> V4L2DeviceIdentity {
        var cap = v4l2_capability()
        try ioctl(fd, reel_vidioc_querycap, "VIDIOC_QUERYCAP", &cap)
        let all = V4L2Capabilities(rawValue: cap.capabilities)
        return V4L2DeviceIdentity(driver: Self.string(cap.driver), card: Self.string(cap.card),
                                  busInfo: Self.string(cap.bus_info), capabilities: all,
                                  deviceCapabilities: all.contains(.deviceCapabilities) ? V4L2Capabilities(rawValue: cap.device_caps) : nil)
    }

    package func enumerateFormat(_ fd: Int32, index: Int) throws -> V4L2FormatEntry? {
        var desc = v4l2_fmtdesc()
        desc.index = UInt32(index)
        desc.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        guard try enumerate(fd, reel_vidioc_enum_fmt, "VIDIOC_ENUM_FMT", &desc) else { return nil }
        return V4L2FormatEntry(fourCC: V4L2FourCC(rawValue: desc.pixelformat), description: Self.string(desc.description),
                               isCompressed: desc.flags & UInt32(V4L2_FMT_FLAG_COMPRESSED) != 0,
                               isEmulated: desc.flags & UInt32(V4L2_FMT_FLAG_EMULATED) != 0)
    }

    package func enumerateFrameSize(_ fd: Int32, fourCC: V4L2FourCC, index: Int) throws -> V4L2FrameSizeEntry? {
        var e = v4l2_frmsizeenum()
        e.index = UInt32(index)
        e.pixel_format = fourCC.rawValue
        guard try enumerate(fd, reel_vidioc_enum_framesizes, "VIDIOC_ENUM_FRAMESIZES", &e) else { return nil }
        if e.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
            return .discrete(PixelSize(width: Int(e.discrete.width), height: Int(e.discrete.height)))
        }
        let s = e.stepwise
        return .stepwise(min: PixelSize(width: Int(s.min_width), height: Int(s.min_height)),
                         max: PixelSize(width: Int(s.max_width), height: Int(s.max_height)),
                         step: PixelSize(width: Int(max(s.step_width, 1)), height: Int(max(s.step_height, 1))))
    }

    package func enumerateFrameInterval(_ fd: Int32, fourCC: V4L2FourCC, size: PixelSize, index: Int) throws -> V4L2FrameIntervalEntry? {
        var e = v4l2_frmivalenum()
        e.index = UInt32(index)
        e.pixel_format = fourCC.rawValue
        e.width = UInt32(size.width)
        e.height = UInt32(size.height)
        guard try enumerate(fd, reel_vidioc_enum_frameintervals, "VIDIOC_ENUM_FRAMEINTERVALS", &e) else { return nil }
        func fraction(_ f: v4l2_fract) -> V4L2Fraction { V4L2Fraction(f.numerator, f.denominator) }
        if e.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue { return .discrete(fraction(e.discrete)) }
        return .stepwise(min: fraction(e.stepwise.min), max: fraction(e.stepwise.max), step: fraction(e.stepwise.step))
    }

    private static func pix(_ format: v4l2_format) -> V4L2PixFormat {
        let p = format.fmt.pix
        return V4L2PixFormat(fourCC: V4L2FourCC(rawValue: p.pixelformat), size: PixelSize(width: Int(p.width), height: Int(p.height)),
                             bytesPerLine: Int(p.bytesperline), sizeImage: Int(p.sizeimage))
    }

    package func getFormat(_ fd: Int32) throws -> V4L2PixFormat {
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        try ioctl(fd, reel_vidioc_g_fmt, "VIDIOC_G_FMT", &format)
        return Self.pix(format)
    }

    package func setFormat(_ fd: Int32, fourCC: V4L2FourCC, size: PixelSize) throws -> V4L2PixFormat {
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        format.fmt.pix.width = UInt32(size.width)
        format.fmt.pix.height = UInt32(size.height)
        format.fmt.pix.pixelformat = fourCC.rawValue
        format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try ioctl(fd, reel_vidioc_s_fmt, "VIDIOC_S_FMT", &format)
        return Self.pix(format)
    }

    private static func parameters(_ parm: v4l2_streamparm) -> V4L2StreamParameters {
        let c = parm.parm.capture
        let t = c.timeperframe
        return V4L2StreamParameters(canSetFrameInterval: c.capability & UInt32(V4L2_CAP_TIMEPERFRAME) != 0,
                                    timePerFrame: t.numerator > 0 && t.denominator > 0 ? V4L2Fraction(t.numerator, t.denominator) : nil)
    }

    package func getStreamParameters(_ fd: Int32) throws -> V4L2StreamParameters {
        var parm = v4l2_streamparm()
        parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        try ioctl(fd, reel_vidioc_g_parm, "VIDIOC_G_PARM", &parm)
        return Self.parameters(parm)
    }

    package func setFrameInterval(_ fd: Int32, _ interval: V4L2Fraction) throws -> V4L2StreamParameters {
        var parm = v4l2_streamparm()
        parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        parm.parm.capture.timeperframe = v4l2_fract(numerator: interval.numerator, denominator: interval.denominator)
        try ioctl(fd, reel_vidioc_s_parm, "VIDIOC_S_PARM", &parm)
        return Self.parameters(parm)
    }

    package func requestBuffers(_ fd: Int32, count: Int) throws -> Int {
        var request = v4l2_requestbuffers()
        request.count = UInt32(count)
        request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        request.memory = V4L2_MEMORY_MMAP.rawValue
        try ioctl(fd, reel_vidioc_reqbufs, "VIDIOC_REQBUFS", &request)
        return Int(request.count)
    }

    private static func buffer(index: Int) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = UInt32(index)
        buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        return buffer
    }

    package func queryBuffer(_ fd: Int32, index: Int) throws -> V4L2BufferLocation {
        var buffer = Self.buffer(index: index)
        try ioctl(fd, reel_vidioc_querybuf, "VIDIOC_QUERYBUF", &buffer)
        return V4L2BufferLocation(index: index, offset: Int(buffer.m.offset), length: Int(buffer.length))
    }

    package func map(_ fd: Int32, _ buffer: V4L2BufferLocation) throws -> UnsafeMutableRawPointer {
        try Syscall.pointer("mapping capture buffer \(buffer.index)") {
            mmap(nil, buffer.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(buffer.offset))
        }
    }

    package func unmap(_ pointer: UnsafeMutableRawPointer, length: Int) {
        _ = try? Syscall.call("unmapping a capture buffer") { munmap(pointer, length) }
    }

    package func queueBuffer(_ fd: Int32, index: Int) throws {
        var buffer = Self.buffer(index: index)
        try ioctl(fd, reel_vidioc_qbuf, "VIDIOC_QBUF", &buffer)
    }

    package func dequeueBuffer(_ fd: Int32) throws -> V4L2FilledBuffer? {
        var buffer = Self.buffer(index: 0)
        do {
            try ioctl(fd, reel_vidioc_dqbuf, "VIDIOC_DQBUF", &buffer)
        } catch let error as ReelError where error.errno == EAGAIN {
            return nil
        }
        let ns = Int64(buffer.timestamp.tv_sec) * 1_000_000_000 + Int64(buffer.timestamp.tv_usec) * 1000
        return V4L2FilledBuffer(index: Int(buffer.index), bytesUsed: Int(buffer.bytesused), sequence: buffer.sequence,
                                timestampNanoseconds: ns, flags: buffer.flags)
    }

    package func streamOn(_ fd: Int32) throws {
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        try ioctl(fd, reel_vidioc_streamon, "VIDIOC_STREAMON", &type)
    }

    package func streamOff(_ fd: Int32) throws {
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        try ioctl(fd, reel_vidioc_streamoff, "VIDIOC_STREAMOFF", &type)
    }

    package func waitForBuffer(_ fd: Int32, timeoutMilliseconds: Int) throws -> V4L2Readiness {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let n = try Syscall.call("waiting for a camera frame") { poll(&entry, 1, Int32(timeoutMilliseconds)) }
        if n == 0 { return .timedOut }
        if entry.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { return .failed }
        return .ready
    }
}
