#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem
import Synchronization

/// Where a ``ReplayBuffer`` with a spill folder keeps the bytes of its packets: files on disk
/// instead of the process's memory, for windows long enough (an hour of 1080p is gigabytes)
/// that memory would not do.
///
/// Packets are copied into segments: unnamed files (`O_TMPFILE`, or a hidden name removed at
/// once where the file system lacks it) of 64 MB, their blocks reserved up front with
/// `posix_fallocate` (so a full disk is an error at the copy, never a `SIGBUS` at a write through
/// the mapping), mapped shared. A spilled packet's data is an `AVBufferRef` over its bytes in
/// the mapping, which holds the segment: the rest of Reel (the cut, the writer) reads it like
/// any packet. The pages written are handed back to the kernel as each 4 MB fills
/// (`MADV_DONTNEED` on a shared file mapping keeps the data in the file), so the process holds
/// about one 4 MB stretch, and a save reads the rest back from the page cache or the disk.
/// A segment goes (unmapped, closed, its blocks freed) when the last packet in it is dropped;
/// a crash leaves nothing, the files having no name.
final class ReplaySpill: @unchecked Sendable {
    /// The folder the segments are made in.
    let folder: URL
    /// The size of a new segment, unless told otherwise (a larger packet gets a segment of its
    /// own size).
    static let defaultSegmentSize = 64 << 20
    /// The size of a new segment.
    let segmentSize: Int

    /// The segments for a buffer of at most `maxBytes`: a quarter of it, between 4 MB and
    /// ``defaultSegmentSize``, so a small buffer does not ask the disk for 64 MB at once and
    /// as much again ahead (a buffer of 1 MB was refused on a disk with 60 MB free, its advice
    /// to lower the size no help: issue 26, F11).
    static func segmentSize(forMaxBytes maxBytes: Int64?) -> Int {
        guard let maxBytes else { return defaultSegmentSize }
        let quarter = Int(clamping: maxBytes / 4) / releaseStride * releaseStride
        return min(defaultSegmentSize, max(releaseStride, quarter))
    }
    /// How much of a segment is written before its pages are handed back.
    static let releaseStride = 4 << 20
    private var current: ReplaySpillSegment?
    /// The next segment, made on a thread of its own once the current one is half full, so that
    /// the encoder's thread, which spills, does not wait for a file to be made, its blocks
    /// reserved and mapped (tens of milliseconds on a slow disk) when the current one fills.
    private let ahead = Ahead()
    /// Segments made on the spilling thread because none was ready (the first is made at once,
    /// by ``init(folder:segmentSize:)``).
    private(set) var segmentsMadeInLine = 0

    /// The segment made ahead, or why it could not be made.
    private final class Ahead: Sendable {
        let state = Mutex<(making: Bool, ready: Result<ReplaySpillSegment, ReelError>?)>((false, nil))
    }

    /// A spill into `folder`; checks at once that a segment can be made there.
    ///
    /// - Throws: the file errors of making a segment (`.ioFailure`, `.permissionDenied`,
    ///   `.insufficientStorage`).
    init(folder: URL, segmentSize: Int = ReplaySpill.defaultSegmentSize) throws {
        self.folder = folder
        self.segmentSize = segmentSize
        current = try ReplaySpillSegment(in: folder, size: segmentSize)
    }

    /// A packet like `packet` whose data is a copy in a segment, with the same times, flags
    /// and side data. Called by one thread at a time (under the buffer's lock).
    ///
    /// - Throws: the file errors of making a new segment when the current one is full.
    func spill(_ packet: EncodedPacket) throws -> EncodedPacket {
        let size = packet.byteCount
        if current.map({ $0.free < size }) ?? true {
            current?.releaseWritten()
            current = nil
            current = try nextSegment(holding: size)
        }
        guard let segment = current else { throw ReelError(.ioFailure, "no spill segment") }
        if segment.used + size > segment.size / 2 { makeNextAhead() }
        let storage = try Packet()
        let offset = segment.used
        packet.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress, size > 0 { memcpy(segment.base + offset, base, size) }
        }
        segment.used += size
        // The buffer holds the segment until FFmpeg frees the last reference to the packet's data.
        let retained = Unmanaged.passRetained(segment).toOpaque()
        guard let buffer = av_buffer_create(segment.base.assumingMemoryBound(to: UInt8.self) + offset, size,
                                            { opaque, _ in
                                                guard let opaque else { return }
                                                Unmanaged<ReplaySpillSegment>.fromOpaque(opaque).release()
                                            }, retained, AV_BUFFER_FLAG_READONLY) else {
            Unmanaged<ReplaySpillSegment>.fromOpaque(retained).release()
            throw ReelError(.encodingFailed, "cannot allocate a packet buffer", hint: "the system is out of memory")
        }
        storage.pointer.pointee.buf = buffer
        storage.pointer.pointee.data = buffer.pointee.data
        storage.pointer.pointee.size = Int32(size)
        packet.copyProperties(into: storage.pointer)
        segment.releaseWrittenStretches()
        return packet.replacingStorage(with: storage)
    }

    /// A segment with room for `size` bytes: the one made ahead if it is ready and large
    /// enough (or why it could not be made: the disk is full), else one made now.
    private func nextSegment(holding size: Int) throws -> ReplaySpillSegment {
        let ready = ahead.state.withLock { state -> Result<ReplaySpillSegment, ReelError>? in
            guard !state.making, let ready = state.ready else { return nil }
            state.ready = nil
            return ready
        }
        switch ready {
        case .success(let segment) where segment.size >= size:
            return segment
        case .failure(let error):
            throw error
        default:
            segmentsMadeInLine += 1
            return try ReplaySpillSegment(in: folder, size: max(segmentSize, size))
        }
    }

    /// Starts making the next segment on a thread of its own, unless one is made or being made.
    private func makeNextAhead() {
        let start = ahead.state.withLock { state -> Bool in
            guard !state.making, state.ready == nil else { return false }
            state.making = true
            return true
        }
        guard start else { return }
        let (ahead, folder, size) = (ahead, folder, segmentSize)
        Thread.detachNewThread {
            let made = Result { () throws(ReelError) -> ReplaySpillSegment in
                do { return try ReplaySpillSegment(in: folder, size: size) } catch { throw error as? ReelError ?? ReelError(.ioFailure, "\(error)") }
            }
            ahead.state.withLock { $0 = (false, made) }
        }
    }
}

/// One spill file, mapped: see ``ReplaySpill``.
final class ReplaySpillSegment: @unchecked Sendable {
    let base: UnsafeMutableRawPointer
    let size: Int
    private let fd: Int32
    /// Bytes written so far, and how many of them were handed back to the kernel.
    var used = 0
    private var released = 0

    /// A segment of `size` bytes in `folder`.
    init(in folder: URL, size: Int) throws {
        func failure(_ e: Int32) -> ReelError {
            var error = Syscall.fileError(e, creating: folder.appendingPathComponent("replay buffer"), action: "keep the replay buffer in")
            if e == ENOSPC {
                // How much it asked for, and how much there is: "no space left" alone read as
                // an empty disk.
                let free = FreeSpace.ofNearest(folder).map { " (\($0.available / 1_000_000) MB free there)" } ?? ""
                error.message += ": the replay buffer keeps its packets there in files of \(size / 1_000_000) MB, the next one made before the last is full\(free)"
            }
            error.hint = e == ENOSPC ? LibraryHint.replaySpillFull : "choose another folder for the replay buffer"
            return error
        }
        // O_TMPFILE is a macro Swift does not import: Linux's __O_TMPFILE with O_DIRECTORY.
        let unnamed: Int32 = 0o20000000 | O_DIRECTORY
        var descriptor = open(folder.path, unnamed | O_RDWR | O_CLOEXEC, 0o600)
        if descriptor < 0 && [EOPNOTSUPP, EISDIR, EINVAL].contains(errno) {
            // No unnamed files here: a hidden name, removed at once.
            let named = FilePlacement.temporaryURL(beside: folder.appendingPathComponent("Reel replay buffer"), purpose: "spill")
            descriptor = open(named.path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0o600)
            if descriptor >= 0 { unlink(named.path) }
        }
        guard descriptor >= 0 else { throw failure(errno) }
        let reserved = posix_fallocate(descriptor, 0, off_t(size))
        guard reserved == 0 else {
            close(descriptor)
            throw failure(reserved)
        }
        guard let mapped = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0), mapped != MAP_FAILED else {
            let e = errno
            close(descriptor)
            throw failure(e)
        }
        fd = descriptor
        base = mapped
        self.size = size
    }

    /// The bytes not yet written.
    var free: Int { size - used }

    /// Hands back the pages of the whole strides written (the data stays in the file).
    func releaseWrittenStretches() {
        let end = used / ReplaySpill.releaseStride * ReplaySpill.releaseStride
        guard end > released else { return }
        madvise(base + released, end - released, MADV_DONTNEED)
        released = end
    }

    /// Hands back the pages of everything written (the segment is full).
    func releaseWritten() {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let end = (used + page - 1) / page * page
        guard end > released else { return }
        madvise(base + released, min(end, size) - released, MADV_DONTNEED)
        released = end
    }

    deinit {
        munmap(base, size)
        close(fd)
    }
}
