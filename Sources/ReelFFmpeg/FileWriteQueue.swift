import Foundation
import ReelCore
import ReelSystem

/// Where a ``FileWriteQueue`` puts its bytes: the file (``SystemFileOutput``), or in tests an
/// output that holds or fails writes on cue.
package protocol FileOutput: AnyObject, Sendable {
    /// Writes all of `bytes` at `offset`; throws the error number of a failed write.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Syscall.Errno)
    /// Closes the file. Called once, after the last write.
    func close()
}

/// A file written with `pwrite` through the syscall funnel.
package final class SystemFileOutput: FileOutput {
    private let fd: Int32

    /// Writes into `fd`, which this output owns from now on and closes.
    package init(fd: Int32) { self.fd = fd }

    package func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Syscall.Errno) {
        do {
            try Syscall.writeAll(fd, bytes, at: offset) { ReelError(.ioFailure, "write", errno: $0) }
        } catch {
            throw Syscall.Errno((error as? ReelError)?.errno ?? EIO)
        }
    }

    package func close() { Syscall.close(fd) }
}

/// The bytes a muxer writes into a recording's file, written by a thread of their own, so that
/// a slow write (a slow or busy disk, a sync) does not hold up the thread that encodes.
///
/// Bounded in bytes: ``enqueue(_:at:)`` takes a chunk at once while fewer than
/// ``maxBytes`` wait (a chunk bigger than the bound is taken when nothing waits), and otherwise
/// waits until the writer has made room. Nothing is ever dropped: a disk slower than the
/// stream for longer than the queue can hold holds up the encoder, as a blocking write did,
/// and the recorder drops (and counts) frames before they are encoded.
///
/// A write that fails stops the writer: the error is kept and returned by every later call
/// (``enqueue(_:at:)``, ``drain()``); what waited behind the failed write is not written (the
/// recording ends on that error, as it did when the write was made on the encoding thread).
/// What was written before stays in the file.
package final class FileWriteQueue: @unchecked Sendable {
    /// The default bound: 64 MiB, a minute of 1080p60 at 8 Mbit/s, so that a disk that stalls
    /// for seconds costs no frame.
    package static let defaultMaxBytes: Int64 = 64 << 20

    private struct Chunk {
        var offset: Int64
        var bytes: [UInt8]
    }

    /// The most bytes waiting (or being written) at once before ``enqueue(_:at:)`` waits.
    package let maxBytes: Int64
    private let output: any FileOutput
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var chunks: [Chunk] = []
    private var head = 0
    private var queued: Int64 = 0
    private var most: Int64 = 0
    private var written: Int64 = 0
    private var failure: Syscall.Errno?
    private var closing = false
    private var waitingForRoom = 0
    private var thread: WorkerThread?

    /// Starts the writer thread, writing into `output`.
    package init(output: any FileOutput, maxBytes: Int64 = FileWriteQueue.defaultMaxBytes) {
        self.output = output
        self.maxBytes = max(1, maxBytes)
        thread = WorkerThread(name: "reel-file-write") { [self] _ in run() }
    }

    deinit {
        assert(thread == nil, "a FileWriteQueue must be closed")
    }

    /// Hands `bytes`, to be written at `offset`, to the writer thread; waits while the queue is
    /// full.
    ///
    /// - Throws: the error number of a write that failed before (nothing is taken then).
    package func enqueue(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Syscall.Errno) {
        let count = Int64(bytes.count)
        condition.lock()
        defer { condition.unlock() }
        while failure == nil && queued > 0 && queued + count > maxBytes {
            waitingForRoom += 1
            condition.wait()
            waitingForRoom -= 1
        }
        if let failure { throw failure }
        guard count > 0 else { return }
        chunks.append(Chunk(offset: offset, bytes: Array(bytes)))
        queued += count
        most = max(most, queued)
        condition.broadcast()
    }

    /// Waits until everything taken has been written.
    ///
    /// - Throws: the error number of a write that failed.
    package func drain() throws(Syscall.Errno) {
        condition.lock()
        defer { condition.unlock() }
        while failure == nil && queued > 0 { condition.wait() }
        if let failure { throw failure }
    }

    /// Writes what waits (see ``drain()``), ends the writer thread and closes the output.
    /// Returns the error number of a write that failed, if one did. Closing twice does nothing.
    @discardableResult
    package func close() -> Syscall.Errno? {
        let result: Syscall.Errno?
        do { try drain(); result = nil } catch { result = error }
        condition.lock()
        closing = true
        let thread = self.thread
        self.thread = nil
        condition.broadcast()
        condition.unlock()
        guard let thread else { return result }
        thread.join()
        output.close()
        return result
    }

    /// The error number of a write that failed, if one has.
    package var error: Syscall.Errno? { locked { failure } }
    /// The bytes waiting to be written (or being written).
    package var queuedBytes: Int64 { locked { queued } }
    /// The most bytes that have waited at once.
    package var mostQueuedBytes: Int64 { locked { most } }
    /// Whether a caller of ``enqueue(_:at:)`` is waiting for room.
    package var isFull: Bool { locked { waitingForRoom > 0 } }
    /// The bytes written into the output so far.
    package var writtenBytes: Int64 { locked { written } }

    private func locked<T>(_ body: () -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }

    /// The writer thread: takes the oldest chunk, writes it outside the lock, then frees its
    /// room; after a failure, lets go of what waits.
    private func run() {
        condition.lock()
        while true {
            while head == chunks.count && !closing { condition.wait() }
            if head == chunks.count { break }
            let chunk = chunks[head]
            condition.unlock()
            let failed: Syscall.Errno? = chunk.bytes.withUnsafeBytes { bytes in
                do throws(Syscall.Errno) { try output.write(bytes, at: chunk.offset) } catch { return error }
                return nil
            }
            condition.lock()
            chunks[head].bytes = []
            head += 1
            queued -= Int64(chunk.bytes.count)
            if let failed {
                failure = failure ?? failed
                chunks = []
                head = 0
                queued = 0
            } else {
                written += Int64(chunk.bytes.count)
            }
            if head == chunks.count {
                chunks.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64 && head * 2 >= chunks.count {
                chunks.removeFirst(head)
                head = 0
            }
            condition.broadcast()
        }
        condition.unlock()
    }
}
