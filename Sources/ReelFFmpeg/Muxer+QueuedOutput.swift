import Foundation
internal import CFFmpeg

// How a muxer's bytes reach the file off the muxing thread.

extension Muxer {
    /// How a file is written off the muxing thread: the bound of its ``FileWriteQueue`` and
    /// what its bytes go through on their way to the file (tests hold or fail writes there).
    struct WriteQueue {
        /// The most bytes waiting to be written before the muxing thread waits.
        var maxBytes: Int64 = FileWriteQueue.defaultMaxBytes
        /// Wraps the file's output; the identity in production.
        var output: (any FileOutput) -> any FileOutput = { $0 }
        /// The room of the file the disk may have back when it fills (see ``FileWriteQueue``).
        var spareRoom: (@Sendable () -> Range<Int64>?)?
        /// How far beyond what is written the disk keeps room for the file (see ``FileWriteQueue``).
        var roomAhead: Int64 = 0
    }

    /// An `AVIOContext` whose writes go into a ``FileWriteQueue`` at the position libavformat
    /// has reached (it seeks, to finish an MKV's header), and whose write callback answers with
    /// the error of a write that failed on the writer thread, so libavformat fails on it as it
    /// did on a failed `write`.
    final class QueuedOutput {
        let queue: FileWriteQueue
        private var position: Int64 = 0
        private var size: Int64 = 0
        private static let bufferSize: Int32 = 64 * 1024

        init(queue: FileWriteQueue) { self.queue = queue }

        func makeContext() -> UnsafeMutablePointer<AVIOContext>? {
            guard let buffer = av_malloc(Int(Self.bufferSize)) else { return nil }
            let opaque = Unmanaged.passUnretained(self).toOpaque()
            let write: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = { opaque, bytes, count in
                Unmanaged<QueuedOutput>.fromOpaque(opaque!).takeUnretainedValue().write(bytes, count: Int(count))
            }
            let seek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = { opaque, offset, whence in
                Unmanaged<QueuedOutput>.fromOpaque(opaque!).takeUnretainedValue().seek(offset, whence: whence)
            }
            guard let context = avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), Self.bufferSize, 1, opaque, nil, write, seek) else {
                av_free(buffer)
                return nil
            }
            return context
        }

        private func write(_ bytes: UnsafeMutablePointer<UInt8>?, count: Int) -> Int32 {
            do {
                try queue.enqueue(UnsafeRawBufferPointer(start: bytes, count: count), at: position)
            } catch {
                return -error.rawValue
            }
            position += Int64(count)
            size = max(size, position)
            return Int32(count)
        }

        private func seek(_ offset: Int64, whence: Int32) -> Int64 {
            let avseekSize: Int32 = 0x10000, avseekForce: Int32 = 0x20000  // AVSEEK_SIZE, AVSEEK_FORCE
            if whence & avseekSize != 0 { return size }
            let target: Int64
            switch whence & ~avseekForce {
            case SEEK_SET: target = offset
            case SEEK_CUR: target = position + offset
            case SEEK_END: target = size + offset
            default: return Int64(-EINVAL)
            }
            guard target >= 0 else { return Int64(-EINVAL) }
            position = target
            return target
        }

        /// Frees the context made by ``makeContext()`` (its buffer was libavformat's to swap).
        static func free(_ context: inout UnsafeMutablePointer<AVIOContext>?) {
            guard context != nil else { return }
            av_freep(&context!.pointee.buffer)
            avio_context_free(&context)
        }
    }
}
