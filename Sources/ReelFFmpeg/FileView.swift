import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// A byte write that changes a file where it lies: `bytes` at `offset`.
struct FilePatch: Equatable {
    var offset: Int64
    var bytes: [UInt8]
}

/// A local file as a reader is to see it: only its first `length` bytes, with `patches` laid
/// over what is read. Lets a recording cut off by a crash be read as the file its recovery
/// makes of it (the complete part, a torn fragment made whole) while the file itself is only
/// read.
struct FileView: Equatable {
    var length: Int64
    var patches: [FilePatch] = []

    /// Lays the patches over `buffer`, which holds the file's bytes from `offset`.
    func overlay(_ buffer: UnsafeMutableRawBufferPointer, at offset: Int64) {
        let end = offset + Int64(buffer.count)
        for patch in patches {
            let from = max(offset, patch.offset), to = min(end, patch.offset + Int64(patch.bytes.count))
            guard from < to else { continue }
            for position in from..<to {
                buffer[Int(position - offset)] = patch.bytes[Int(position - patch.offset)]
            }
        }
    }
}

/// The `AVIOContext` through which libavformat reads a ``FileView`` of a local file: reads
/// end at the view's length, and its patches are laid over them. Owns its descriptor and
/// the context; ``InputFile`` keeps it alive as long as its demuxer.
final class FileViewInput {
    private let fd: Int32
    private let view: FileView
    private var position: Int64 = 0
    private(set) var context: UnsafeMutablePointer<AVIOContext>?
    private static let bufferSize: Int32 = 64 * 1024

    init(url: URL, view: FileView) throws {
        self.view = view
        fd = try Syscall.call(orThrow: { Syscall.fileError($0, at: url, action: "open") }) { open(url.path, O_RDONLY | O_CLOEXEC) }
        guard let buffer = av_malloc(Int(Self.bufferSize)) else {
            Syscall.close(fd)
            throw ReelError(.encodingFailed, "cannot allocate a buffer to read \(url.path)")
        }
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        let read: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = { opaque, bytes, count in
            Unmanaged<FileViewInput>.fromOpaque(opaque!).takeUnretainedValue().read(into: bytes, count: Int(count))
        }
        let seek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = { opaque, offset, whence in
            Unmanaged<FileViewInput>.fromOpaque(opaque!).takeUnretainedValue().seek(offset, whence: whence)
        }
        context = avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), Self.bufferSize, 0, opaque, read, nil, seek)
        guard context != nil else {
            av_free(buffer)
            Syscall.close(fd)
            throw ReelError(.encodingFailed, "cannot allocate a reader for \(url.path)")
        }
    }

    deinit {
        if context != nil {
            av_freep(&context!.pointee.buffer)
            avio_context_free(&context)
        }
        Syscall.close(fd)
    }

    private func read(into bytes: UnsafeMutablePointer<UInt8>?, count: Int) -> Int32 {
        guard let bytes else { return reel_averror(EINVAL) }
        let wanted = Int(min(Int64(count), max(0, view.length - position)))
        guard wanted > 0 else { return FFmpeg.eof }
        let buffer = UnsafeMutableRawBufferPointer(start: bytes, count: wanted)
        let done: Int
        do {
            done = try Syscall.readAll(fd, into: buffer, at: position, orThrow: { ReelError(.ioFailure, "read", errno: $0) })
        } catch {
            return reel_averror((error as? ReelError)?.errno ?? EIO)
        }
        guard done > 0 else { return FFmpeg.eof }
        view.overlay(UnsafeMutableRawBufferPointer(start: bytes, count: done), at: position)
        position += Int64(done)
        return Int32(done)
    }

    private func seek(_ offset: Int64, whence: Int32) -> Int64 {
        if whence & AVSEEK_SIZE != 0 { return view.length }
        let target: Int64
        switch whence & ~AVSEEK_FORCE {
        case SEEK_SET: target = offset
        case SEEK_CUR: target = position + offset
        case SEEK_END: target = view.length + offset
        default: return Int64(reel_averror(EINVAL))
        }
        guard target >= 0 else { return Int64(reel_averror(EINVAL)) }
        position = target
        return target
    }
}
