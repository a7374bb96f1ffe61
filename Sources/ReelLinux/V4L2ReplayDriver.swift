#if canImport(Glibc)
import Glibc
#endif
import ReelCore
import ReelSystem
import Synchronization

/// A ``V4L2Driver`` that answers from recordings of real cameras (``V4L2Recording``) and
/// streams frames of known contents, in real time, at the negotiated rate.
///
/// It behaves as the kernel does where the camera logic can tell: enumerations end with
/// `EINVAL`, `S_FMT` adjusts to an offered size, `S_PARM` to an offered interval, `DQBUF`
/// answers `EAGAIN` before a frame is due, buffers are memory the "driver" writes into.
/// Failures are injected by operation (``fail(_:errno:path:after:)``): `EACCES` on open,
/// `EBUSY` on `S_FMT`, `ENODEV` from `DQBUF` after some frames (an unplugged camera)…
package final class V4L2ReplayDriver: V4L2Driver, Sendable {
    /// The operations a failure can be injected into.
    package enum Operation: Sendable, Hashable {
        case open, queryCapabilities, setFormat, setFrameInterval, requestBuffers, streamOn, dequeue
    }

    /// How the replayed timestamps are made.
    package enum Timestamps: Sendable, Hashable {
        /// `CLOCK_MONOTONIC` readings, flagged `V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC` (what UVC does).
        case monotonic
        /// Readings of an unknown clock starting at `start` nanoseconds, unflagged.
        case unknownClock(start: Int64)
    }

    /// A frame the driver is about to deliver: write its bytes into `buffer`.
    package struct FrameRequest {
        /// The driver's sequence number of the frame.
        package var sequence: UInt32
        /// The format the device is set to.
        package var format: V4L2PixFormat
        /// The mapped buffer to fill.
        package var buffer: UnsafeMutableRawBufferPointer
    }

    /// Writes a frame's contents and returns how many bytes it used.
    package typealias FrameWriter = @Sendable (FrameRequest) -> Int

    private struct Failure {
        var operation: Operation
        var errno: Int32
        var path: String?
        var after: Int
        var calls = 0
    }

    private struct Buffer: @unchecked Sendable {
        var memory: UnsafeMutableRawPointer
        var length: Int
        var mapped = false
    }

    private struct OpenFile {
        var path: String
        var recording: V4L2Recording
        var format: V4L2PixFormat
        var interval: V4L2Fraction
        var buffers: [Buffer] = []
        var queued: [Int] = []
        var streaming = false
        var streamStart: Int64 = 0
        var nextSequence: UInt32 = 0
        var delivered = 0
    }

    private struct State {
        var failures: [Failure] = []
        var files: [Int32: OpenFile] = [:]
        var attachments: [String: V4L2Attachment] = [:]
        var nextFD: Int32 = 1000
        var opens = 0
        var streamOns = 0
    }

    private let devices: [String: V4L2Recording]
    private let state = Mutex(State())
    private let writer: FrameWriter
    private let skipped: Set<UInt32>
    private let timestamps: Timestamps
    private let stallAfter: Int?

    /// Creates a driver with a device node for each recording.
    ///
    /// - Parameters:
    ///   - devices: recordings by path (`/dev/video0`).
    ///   - skippedSequences: sequence numbers the "driver" drops (gaps the camera must count).
    ///   - timestamps: which clock the buffer timestamps are on.
    ///   - stallAfterFrames: stop delivering after this many frames (the device then just
    ///     stays silent), to test that stopping does not wait for a frame.
    ///   - writer: writes each frame; by default ``patternWriter``.
    package init(devices: [String: V4L2Recording], skippedSequences: Set<UInt32> = [], timestamps: Timestamps = .monotonic,
                 stallAfterFrames: Int? = nil, writer: @escaping FrameWriter = V4L2ReplayDriver.patternWriter) {
        self.devices = devices
        self.skipped = skippedSequences
        self.timestamps = timestamps
        self.stallAfter = stallAfterFrames
        self.writer = writer
    }

    deinit {
        state.withLock { s in
            for file in s.files.values { for b in file.buffers { b.memory.deallocate() } }
        }
    }

    /// Makes the `after+1`th and every later call of `operation` (on `path`, or any device)
    /// fail with `errno`. For `.dequeue`, `after` counts delivered frames: a camera unplugged
    /// mid-stream.
    package func fail(_ operation: Operation, errno: Int32, path: String? = nil, after: Int = 0) {
        state.withLock { $0.failures.append(Failure(operation: operation, errno: errno, path: path, after: after)) }
    }

    /// How many descriptors are open now.
    package var openDescriptors: Int { state.withLock { $0.files.count } }
    /// How many buffers are mapped now.
    package var mappedBuffers: Int { state.withLock { $0.files.values.reduce(0) { $0 + $1.buffers.filter(\.mapped).count } } }
    /// How many times a device was opened.
    package var openCount: Int { state.withLock { $0.opens } }

    /// The default contents: luma `16 + sequence % 200` everywhere, chroma 128, for YUYV and
    /// NV12; a compressed frame gets `sizeImage / 8` bytes of the sequence number.
    package static let patternWriter: FrameWriter = { request in
        let luma = UInt8(16 + request.sequence % 200)
        let format = request.format
        let buffer = request.buffer
        switch format.fourCC {
        case .yuyv:
            let used = min(buffer.count, format.bytesPerLine * format.size.height)
            for i in 0..<used { buffer[i] = i & 1 == 0 ? luma : 128 }
            return used
        case .nv12:
            let lumaBytes = format.bytesPerLine * format.size.height
            let used = min(buffer.count, lumaBytes + lumaBytes / 2)
            for i in 0..<used { buffer[i] = i < lumaBytes ? luma : 128 }
            return used
        default:
            let used = min(buffer.count, max(format.sizeImage / 8, 1))
            for i in 0..<used { buffer[i] = UInt8(truncatingIfNeeded: request.sequence) }
            return used
        }
    }

    // MARK: failures

    /// Throws the injected failure for `operation` if one is due; counts the call otherwise.
    private func check(_ operation: Operation, path: String, _ name: String, in s: inout State) throws {
        for i in s.failures.indices where s.failures[i].operation == operation && (s.failures[i].path == nil || s.failures[i].path == path) {
            if s.failures[i].calls >= s.failures[i].after { throw Syscall.error(name, errno: s.failures[i].errno) }
            if operation != .dequeue { s.failures[i].calls += 1 }
        }
    }

    private func dequeueFailure(for file: OpenFile, in s: State) -> Int32? {
        s.failures.first { $0.operation == .dequeue && ($0.path == nil || $0.path == file.path) && file.delivered >= $0.after }?.errno
    }

    private func withFile<R>(_ fd: Int32, _ name: String, _ body: (inout OpenFile, inout State) throws -> R) throws -> R {
        try state.withLock { s in
            guard var file = s.files[fd] else { throw Syscall.error(name, errno: EBADF) }
            defer { s.files[fd] = file }
            return try body(&file, &s)
        }
    }

    // MARK: V4L2Driver

    package func devicePaths() -> [String] {
        devices.keys.sorted { a, b in
            let na = Int(a.drop { !$0.isNumber }) ?? 0, nb = Int(b.drop { !$0.isNumber }) ?? 0
            return na != nb ? na < nb : a < b
        }
    }

    package func exists(_ path: String) -> Bool { devices[path] != nil }

    /// How each replayed device is attached (as udev would say); nothing known unless set.
    package var attachments: [String: V4L2Attachment] {
        get { state.withLock { $0.attachments } }
        set { state.withLock { $0.attachments = newValue } }
    }

    package func attachment(of path: String) -> V4L2Attachment { attachments[path] ?? V4L2Attachment() }

    package func open(_ path: String) throws -> Int32 {
        try state.withLock { s in
            try check(.open, path: path, "opening \(path)", in: &s)
            guard let recording = devices[path] else { throw Syscall.error("opening \(path)", errno: ENOENT) }
            let format = recording.currentFormat ?? Self.defaultFormat(recording)
            let interval = recording.currentInterval ?? Self.intervals(recording, format).first ?? V4L2Fraction(1, 30)
            let fd = s.nextFD
            s.nextFD += 1
            s.opens += 1
            s.files[fd] = OpenFile(path: path, recording: recording, format: format, interval: interval)
            return fd
        }
    }

    package func close(_ fd: Int32) {
        state.withLock { s in
            guard let file = s.files.removeValue(forKey: fd) else { return }
            for b in file.buffers { b.memory.deallocate() }
        }
    }

    package func queryCapabilities(_ fd: Int32) throws -> V4L2DeviceIdentity {
        try withFile(fd, "VIDIOC_QUERYCAP") { file, s in
            try check(.queryCapabilities, path: file.path, "VIDIOC_QUERYCAP", in: &s)
            return file.recording.identity
        }
    }

    package func enumerateFormat(_ fd: Int32, index: Int) throws -> V4L2FormatEntry? {
        try withFile(fd, "VIDIOC_ENUM_FMT") { file, _ in
            index < file.recording.formats.count ? file.recording.formats[index].entry : nil
        }
    }

    package func enumerateFrameSize(_ fd: Int32, fourCC: V4L2FourCC, index: Int) throws -> V4L2FrameSizeEntry? {
        try withFile(fd, "VIDIOC_ENUM_FRAMESIZES") { file, _ in
            guard let format = file.recording.formats.first(where: { $0.entry.fourCC == fourCC }),
                  index < format.sizes.count else { return nil }
            return format.sizes[index].size
        }
    }

    package func enumerateFrameInterval(_ fd: Int32, fourCC: V4L2FourCC, size: PixelSize, index: Int) throws -> V4L2FrameIntervalEntry? {
        try withFile(fd, "VIDIOC_ENUM_FRAMEINTERVALS") { file, _ in
            guard let entry = Self.sizeEntry(file.recording, fourCC, size), index < entry.intervals.count else { return nil }
            return entry.intervals[index]
        }
    }

    package func getFormat(_ fd: Int32) throws -> V4L2PixFormat {
        try withFile(fd, "VIDIOC_G_FMT") { file, _ in file.format }
    }

    package func setFormat(_ fd: Int32, fourCC: V4L2FourCC, size: PixelSize) throws -> V4L2PixFormat {
        try withFile(fd, "VIDIOC_S_FMT") { file, s in
            try check(.setFormat, path: file.path, "VIDIOC_S_FMT", in: &s)
            if file.streaming || !file.buffers.isEmpty { throw Syscall.error("VIDIOC_S_FMT", errno: EBUSY) }
            // Like a driver: an unknown format becomes the first one, a size the nearest offered.
            let format = file.recording.formats.first { $0.entry.fourCC == fourCC } ?? file.recording.formats.first
            guard let format else { throw Syscall.error("VIDIOC_S_FMT", errno: EINVAL) }
            var best = size
            var bestDistance = Double.infinity
            for entry in format.sizes {
                let candidate: PixelSize
                switch entry.size {
                case .discrete(let s): candidate = s
                case .stepwise: candidate = V4L2FrameSize(Self.extent(entry.size), frameRates: .discrete([])).closestSize(to: size)
                }
                let d = V4L2Negotiation.distance(Double(candidate.width * candidate.height), Double(size.width * size.height))
                if d < bestDistance { best = candidate; bestDistance = d }
            }
            file.format = Self.pixFormat(format.entry, best)
            let offered = Self.intervals(file.recording, file.format)
            if !offered.contains(file.interval), let first = offered.first { file.interval = first }
            return file.format
        }
    }

    package func getStreamParameters(_ fd: Int32) throws -> V4L2StreamParameters {
        try withFile(fd, "VIDIOC_G_PARM") { file, _ in
            V4L2StreamParameters(canSetFrameInterval: file.recording.canSetFrameInterval, timePerFrame: file.interval)
        }
    }

    package func setFrameInterval(_ fd: Int32, _ interval: V4L2Fraction) throws -> V4L2StreamParameters {
        try withFile(fd, "VIDIOC_S_PARM") { file, s in
            try check(.setFrameInterval, path: file.path, "VIDIOC_S_PARM", in: &s)
            let offered = Self.intervals(file.recording, file.format)
            if let nearest = offered.min(by: { abs($0.seconds - interval.seconds) < abs($1.seconds - interval.seconds) }) {
                file.interval = nearest
            }
            return V4L2StreamParameters(canSetFrameInterval: file.recording.canSetFrameInterval, timePerFrame: file.interval)
        }
    }

    package func requestBuffers(_ fd: Int32, count: Int) throws -> Int {
        try withFile(fd, "VIDIOC_REQBUFS") { file, s in
            try check(.requestBuffers, path: file.path, "VIDIOC_REQBUFS", in: &s)
            if file.streaming || file.buffers.contains(where: \.mapped) { throw Syscall.error("VIDIOC_REQBUFS", errno: EBUSY) }
            for b in file.buffers { b.memory.deallocate() }
            file.buffers = []
            file.queued = []
            let n = min(max(count, 0), 32)
            let length = max(file.format.sizeImage, 1)
            file.buffers = (0..<n).map { _ in
                Buffer(memory: UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 64), length: length)
            }
            return n
        }
    }

    package func queryBuffer(_ fd: Int32, index: Int) throws -> V4L2BufferLocation {
        try withFile(fd, "VIDIOC_QUERYBUF") { file, _ in
            guard index >= 0, index < file.buffers.count else { throw Syscall.error("VIDIOC_QUERYBUF", errno: EINVAL) }
            return V4L2BufferLocation(index: index, offset: index * 0x10_0000, length: file.buffers[index].length)
        }
    }

    package func map(_ fd: Int32, _ buffer: V4L2BufferLocation) throws -> UnsafeMutableRawPointer {
        try withFile(fd, "mapping capture buffer \(buffer.index)") { file, _ in
            let index = buffer.offset / 0x10_0000
            guard index >= 0, index < file.buffers.count, buffer.length <= file.buffers[index].length else {
                throw Syscall.error("mapping capture buffer \(buffer.index)", errno: EINVAL)
            }
            file.buffers[index].mapped = true
            return file.buffers[index].memory
        }
    }

    package func unmap(_ pointer: UnsafeMutableRawPointer, length: Int) {
        state.withLock { s in
            for (fd, var file) in s.files {
                if let i = file.buffers.firstIndex(where: { $0.memory == pointer }) {
                    file.buffers[i].mapped = false
                    s.files[fd] = file
                }
            }
        }
    }

    package func queueBuffer(_ fd: Int32, index: Int) throws {
        try withFile(fd, "VIDIOC_QBUF") { file, _ in
            guard index >= 0, index < file.buffers.count, !file.queued.contains(index) else {
                throw Syscall.error("VIDIOC_QBUF", errno: EINVAL)
            }
            file.queued.append(index)
        }
    }

    package func streamOn(_ fd: Int32) throws {
        try withFile(fd, "VIDIOC_STREAMON") { file, s in
            try check(.streamOn, path: file.path, "VIDIOC_STREAMON", in: &s)
            guard !file.buffers.isEmpty else { throw Syscall.error("VIDIOC_STREAMON", errno: EINVAL) }
            file.streaming = true
            file.streamStart = HostClock().now().nanoseconds
            file.nextSequence = 0
            s.streamOns += 1
        }
    }

    package func streamOff(_ fd: Int32) throws {
        try withFile(fd, "VIDIOC_STREAMOFF") { file, _ in
            file.streaming = false
            file.queued = []
        }
    }

    /// The sequence number of the next frame and when it is due (monotonic ns).
    private func next(_ file: inout OpenFile) -> (sequence: UInt32, due: Int64) {
        while skipped.contains(file.nextSequence) { file.nextSequence += 1 }
        let interval = Int64(file.interval.numerator) * 1_000_000_000 / Int64(max(file.interval.denominator, 1))
        return (file.nextSequence, file.streamStart + Int64(file.nextSequence) * interval)
    }

    package func waitForBuffer(_ fd: Int32, timeoutMilliseconds: Int) throws -> V4L2Readiness {
        let now = HostClock().now().nanoseconds
        let timeout = now + Int64(timeoutMilliseconds) * 1_000_000
        let due: Int64? = try withFile(fd, "waiting for a camera frame") { file, s in
            if dequeueFailure(for: file, in: s) != nil { return Int64.min }
            guard file.streaming, !file.queued.isEmpty else { return nil }
            if let stallAfter, file.delivered >= stallAfter { return nil }
            return next(&file).due
        }
        if due == Int64.min { return .failed }
        let wake = min(due ?? timeout, timeout)
        HostClock().sleep(until: MediaTime(nanoseconds: wake))
        if let due, due <= timeout { return .ready }
        return .timedOut
    }

    package func dequeueBuffer(_ fd: Int32) throws -> V4L2FilledBuffer? {
        let pending: (V4L2FilledBuffer, Buffer, V4L2PixFormat)? = try withFile(fd, "VIDIOC_DQBUF") { file, s in
            if let code = dequeueFailure(for: file, in: s) { throw Syscall.error("VIDIOC_DQBUF", errno: code) }
            guard file.streaming else { throw Syscall.error("VIDIOC_DQBUF", errno: EINVAL) }
            if let stallAfter, file.delivered >= stallAfter { return nil }
            let (sequence, due) = next(&file)
            guard !file.queued.isEmpty, due <= HostClock().now().nanoseconds else { return nil }
            let index = file.queued.removeFirst()
            file.nextSequence = sequence + 1
            file.delivered += 1
            let stamp: Int64, flags: UInt32
            switch timestamps {
            case .monotonic: stamp = due; flags = V4L2FilledBuffer.timestampMonotonic
            case .unknownClock(let start):
                stamp = start + (due - file.streamStart); flags = 0
            }
            // Timestamps travel as a timeval: microseconds.
            let filled = V4L2FilledBuffer(index: index, bytesUsed: 0, sequence: sequence,
                                          timestampNanoseconds: stamp / 1000 * 1000, flags: flags)
            return (filled, file.buffers[index], file.format)
        }
        guard let (found, buffer, format) = pending else { return nil }
        var filled = found
        // Fill outside the lock, as hardware would: the buffer belongs to the driver until dequeued.
        let used = writer(FrameRequest(sequence: filled.sequence, format: format,
                                       buffer: UnsafeMutableRawBufferPointer(start: buffer.memory, count: buffer.length)))
        filled.bytesUsed = min(max(used, 0), buffer.length)
        return filled
    }

    // MARK: helpers

    private static func extent(_ entry: V4L2FrameSizeEntry) -> V4L2FrameSize.Extent {
        switch entry {
        case .discrete(let s): return .discrete(s)
        case let .stepwise(min, max, step): return .stepwise(min: min, max: max, step: step)
        }
    }

    private static func sizeEntry(_ recording: V4L2Recording, _ fourCC: V4L2FourCC, _ size: PixelSize) -> V4L2Recording.Size? {
        guard let format = recording.formats.first(where: { $0.entry.fourCC == fourCC }) else { return nil }
        return format.sizes.first { entry in
            switch entry.size {
            case .discrete(let s): return s == size
            case let .stepwise(min, max, _):
                return (min.width...max.width).contains(size.width) && (min.height...max.height).contains(size.height)
            }
        }
    }

    /// The discrete intervals offered for a format (for a range: its two ends).
    private static func intervals(_ recording: V4L2Recording, _ format: V4L2PixFormat) -> [V4L2Fraction] {
        guard let entry = sizeEntry(recording, format.fourCC, format.size) else { return [] }
        return entry.intervals.flatMap { interval -> [V4L2Fraction] in
            switch interval {
            case .discrete(let f): return [f]
            case let .stepwise(min, max, _): return [min, max]
            }
        }
    }

    private static func pixFormat(_ entry: V4L2FormatEntry, _ size: PixelSize) -> V4L2PixFormat {
        switch entry.fourCC {
        case .yuyv:
            return V4L2PixFormat(fourCC: .yuyv, size: size, bytesPerLine: size.width * 2, sizeImage: size.width * size.height * 2)
        case .nv12:
            return V4L2PixFormat(fourCC: .nv12, size: size, bytesPerLine: size.width, sizeImage: size.width * size.height * 3 / 2)
        default:
            return V4L2PixFormat(fourCC: entry.fourCC, size: size, bytesPerLine: 0, sizeImage: size.width * size.height * 2)
        }
    }

    private static func defaultFormat(_ recording: V4L2Recording) -> V4L2PixFormat {
        guard let first = recording.formats.first, let size = first.sizes.first else {
            return V4L2PixFormat(fourCC: .yuyv, size: PixelSize(width: 640, height: 480), bytesPerLine: 1280, sizeImage: 614_400)
        }
        switch size.size {
        case .discrete(let s): return pixFormat(first.entry, s)
        case .stepwise(_, let max, _): return pixFormat(first.entry, max)
        }
    }
}
