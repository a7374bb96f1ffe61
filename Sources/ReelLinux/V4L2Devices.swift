#if canImport(Glibc)
import Glibc
#endif
import ReelCore
import ReelSystem

/// The video devices of this machine: cameras, the nodes that are not cameras, and those
/// that could not be opened (and why).
public struct V4L2DeviceList: Sendable, Hashable {
    /// Nodes that capture video with streaming I/O: cameras Reel can record.
    public var cameras: [V4L2Device]
    /// Nodes that opened but do not capture video (a UVC camera's metadata node, a codec).
    public var otherDevices: [V4L2Device]
    /// Nodes that could not be opened or queried, with the error.
    public var unavailable: [V4L2UnavailableDevice]

    /// Creates a list.
    public init(cameras: [V4L2Device] = [], otherDevices: [V4L2Device] = [], unavailable: [V4L2UnavailableDevice] = []) {
        self.cameras = cameras
        self.otherDevices = otherDevices
        self.unavailable = unavailable
    }
}

/// A video device node that could not be described.
public struct V4L2UnavailableDevice: Sendable, Hashable {
    /// The node, e.g. `/dev/video2`.
    public var path: String
    /// Why it could not be opened or queried.
    public var error: ReelError

    /// Creates an entry.
    public init(path: String, error: ReelError) {
        self.path = path
        self.error = error
    }
}

/// Finding V4L2 cameras and checking access to them.
public enum V4L2Devices {
    /// The hint for a camera the user may not open.
    public static let permissionHint = "add your user to the video group: sudo usermod -aG video $USER, then log in again"

    /// Every `/dev/video*` node, described: cameras with their formats, sizes and rates.
    public static func list() -> V4L2DeviceList { list(driver: SystemV4L2Driver()) }

    /// Describes the camera at `path`.
    ///
    /// - Throws: `.sourceUnavailable` (no such device), `.permissionDenied`, `.busy`, or
    ///   `.unsupportedFormat` when the node does not capture video.
    public static func describe(_ path: String) throws -> V4L2Device { try describe(path, driver: SystemV4L2Driver()) }

    /// Whether this process may use the camera at `path`, like
    /// `AVCaptureDevice.authorizationStatus(for:)`: `.absent` when there is no such node,
    /// `.denied` with what to do when it may not be opened, `.busy` when another program
    /// streams from it.
    public static func authorizationStatus(forCamera path: String) -> AuthorizationStatus {
        authorizationStatus(forCamera: path, driver: SystemV4L2Driver())
    }

    package static func list(driver: any V4L2Driver) -> V4L2DeviceList {
        var result = V4L2DeviceList()
        for path in driver.devicePaths() {
            do {
                let device = try open(path, driver: driver) { fd, identity in
                    try V4L2Device.describe(path: path, fd: fd, identity: identity, driver: driver)
                }
                if device.isCamera { result.cameras.append(device) } else { result.otherDevices.append(device) }
            } catch {
                result.unavailable.append(V4L2UnavailableDevice(path: path, error: failure(error, "opening \(path)", path: path)))
            }
        }
        return result
    }

    package static func describe(_ path: String, driver: any V4L2Driver) throws -> V4L2Device {
        let device = try open(path, driver: driver) { fd, identity in
            try V4L2Device.describe(path: path, fd: fd, identity: identity, driver: driver)
        }
        guard device.isCamera else { throw notACamera(device) }
        return device
    }

    package static func authorizationStatus(forCamera path: String, driver: any V4L2Driver) -> AuthorizationStatus {
        guard driver.exists(path) else { return .absent }
        let fd: Int32
        do {
            fd = try driver.open(path)
        } catch {
            switch (error as? ReelError)?.errno {
            case EACCES, EPERM: return .denied(hint: permissionHint)
            case EBUSY: return .busy
            default: return .absent
            }
        }
        defer { driver.close(fd) }
        // Drivers let several programs open a camera but only one stream from it: asking for
        // no buffers is refused with EBUSY while another program owns the queue.
        do {
            _ = try driver.requestBuffers(fd, count: 0)
        } catch let error as ReelError where error.errno == EBUSY {
            return .busy
        } catch {
            // EINVAL: no streaming I/O at all. Not ours to judge here: it opened.
        }
        return .authorized
    }

    /// Opens `path`, queries it and runs `body` with the descriptor, closing it afterwards.
    package static func open<R>(_ path: String, driver: any V4L2Driver,
                                _ body: (Int32, V4L2DeviceIdentity) throws -> R) throws -> R {
        let fd: Int32
        do { fd = try driver.open(path) } catch { throw failure(error, "opening \(path)", path: path) }
        defer { driver.close(fd) }
        let identity: V4L2DeviceIdentity
        do { identity = try driver.queryCapabilities(fd) } catch {
            throw failure(error, "asking \(path) what it is", path: path)
        }
        do { return try body(fd, identity) } catch { throw failure(error, "reading the formats of \(path)", path: path) }
    }

    static func notACamera(_ device: V4L2Device) -> ReelError {
        ReelError(.unsupportedFormat,
                  "\(device.path) (\(device.card)) is not a video capture device (it offers \(device.capabilities))",
                  hint: "\(LibraryHint.chooseCameraNode) (a UVC camera's second node carries only metadata)")
    }

    /// What the user can do about `errno` on the camera at `path`.
    static func hint(errno code: Int32, path: String) -> String? {
        switch code {
        case EACCES, EPERM: return permissionHint
        case EBUSY: return "another program is using \(path); close it (fuser \(path) shows which) and try again"
        case ENOENT: return LibraryHint.listCameras
        case ENODEV, ENXIO: return "the camera was disconnected; plug it back in"
        case EIO: return "the camera stopped answering; plug it in again or try another USB port"
        default: return nil
        }
    }

    /// `error` as a ``ReelError`` that says what was being done to which camera.
    static func failure(_ error: any Error, _ what: String, path: String) -> ReelError {
        guard let reel = error as? ReelError else { return ReelError(.ioFailure, "\(what) failed: \(error)") }
        guard let code = reel.errno, reel.message.hasPrefix("VIDIOC") || reel.message.hasPrefix("opening")
                || reel.message.hasPrefix("mapping") || reel.message.hasPrefix("waiting") else { return reel }
        var wrapped = Syscall.error(what, errno: code, hint: hint(errno: code, path: path))
        if code == ENOENT && what.hasPrefix("opening") {
            wrapped.message = "there is no camera at \(path)"
        }
        return wrapped
    }
}
