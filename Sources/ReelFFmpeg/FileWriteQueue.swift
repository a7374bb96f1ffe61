import Foundation
import ReelCore
import ReelSystem
import Synchronization

/// Where a ``FileWriteQueue`` puts its bytes: the file (``SystemFileOutput``), or in tests an
/// output that holds or fails writes on cue.
package protocol FileOutput: AnyObject, Sendable {
    /// Writes all of `bytes` at `offset`; throws the error number of a failed write.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Syscall.Errno)
    /// Closes the file. Called once, after the last write.
    func close()
    /// Gives the disk back the room under `range`, bytes of the file that read as zeros and
    /// that nothing reads before writing them again: the file keeps its size and reads the
    /// same (see ``Syscall/punchHole(_:range:)``). Throws the error number if it cannot.
    func giveBack(_ range: Range<Int64>) throws(Syscall.Errno)
    /// Has the disk keep the room under `range`, beyond the file's end, for writes to come
    /// (see ``Syscall/keepRoom(_:range:)``). Throws the error number if it cannot.
    func keepRoom(_ range: Range<Int64>) throws(Syscall.Errno)
    /// Gives back the room kept beyond the file's end that no write used. Called before ``close()``.
    func trimKeptRoom()
}

extension FileOutput {
    /// Cannot: an output that holds no file of its own (a test's) has no room to give back.
    package func giveBack(_ range: Range<Int64>) throws(Syscall.Errno) { throw Syscall.Errno(EOPNOTSUPP) }
    /// Cannot: an output that holds no file of its own keeps no room.
    package func keepRoom(_ range: Range<Int64>) throws(Syscall.Errno) { throw Syscall.Errno(EOPNOTSUPP) }
    package func trimKeptRoom() {}
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

    package func giveBack(_ range: Range<Int64>) throws(Syscall.Errno) {
        if case .failure(let error) = Syscall.punchHole(fd, range: range) { throw error }
    }

    package func keepRoom(_ range: Range<Int64>) throws(Syscall.Errno) {
        if case .failure(let error) = Syscall.keepRoom(fd, range: range) { throw error }
    }

    package func trimKeptRoom() {
        // A truncation to its own size frees the blocks kept past the end.
        var info = stat()
        guard case .success = Syscall.attempt({ fstat(fd, &info) }) else { return }
        _ = Syscall.attempt { ftruncate(fd, info.st_size) }
    }
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
///
/// A file may hold room it does not need (an MP4's space reserved for its final index, of
/// which only the start is ever written): given ``spareRoom``, the first write that finds the
/// disk full (`ENOSPC`, `EDQUOT`) gives the disk back the room it names (``FileOutput/giveBack(_:)``)
/// and is made again, and the writer goes on into that room; ``roomGivenBack`` says so, for the
/// file's owner to end the recording (the disk is full all the same). Once only (also once the
/// room kept ahead, below, ran out): the next write that finds the disk full fails as any other.
///
/// A recording's file (with or without such room) is given ``roomAhead``: the writer
/// has the disk keep that much beyond what it has written (``FileOutput/keepRoom(_:)``), topped
/// up as it goes. When the disk cannot keep more (another program filled it), the writes go on
/// into the room kept, ``roomGivenBack`` says 0 and the owner ends the recording for the disk:
/// what was taken reaches the disk, and the file is finished in that room. It failed on the
/// first write past the disk's end, what waited in the queue lost (issue 26, F1). What no write
/// used is given back at ``close()``.
package final class FileWriteQueue: @unchecked Sendable {
    /// The default bound: 64 MiB, a minute of 1080p60 at 8 Mbit/s, so that a disk that stalls
    /// for seconds costs no frame.
    package static let defaultMaxBytes: Int64 = 64 << 20

    private struct Chunk: Sendable {
        var offset: Int64
        var bytes: [UInt8]
    }

    /// The most bytes waiting (or being written) at once before ``enqueue(_:at:)`` waits.
    package let maxBytes: Int64
    private let output: any FileOutput
    /// The chunks, bounded in bytes; a chunk keeps its room until it is written.
    private let channel: Channel<Chunk>
    private let outcome = Mutex<(written: Int64, failure: Syscall.Errno?, givenBack: Int64?)>((0, nil, nil))
    /// The file's room that the disk may have back when it fills (see the type's description),
    /// asked on the writer thread at that moment; `nil` or an empty range: none.
    private let spareRoom: (@Sendable () -> Range<Int64>?)?
    /// How far beyond what is written the disk keeps room for the file (see the type's
    /// description); 0: none. Used by the writer thread alone, as ``keptUpTo``.
    private let roomAhead: Int64
    /// Where the room kept for the file ends; `nil` once it cannot be kept (the disk is full,
    /// or its file system keeps none).
    private var keptUpTo: Int64? = 0
    /// Whether the spare room was given back (once only, also after the room kept ahead ran
    /// out: the end of a file may need more than was kept). Used by the writer thread alone.
    private var spareGivenBack = false
    private let worker = Mutex<OutputWorker<Chunk>?>(nil)

    /// Starts the writer thread, writing into `output`; `spareRoom` names the room of the file
    /// the disk may have back when it fills (see the type's description).
    package init(output: any FileOutput, maxBytes: Int64 = FileWriteQueue.defaultMaxBytes,
                 spareRoom: (@Sendable () -> Range<Int64>?)? = nil, roomAhead: Int64 = 0) {
        self.output = output
        self.spareRoom = spareRoom
        self.roomAhead = max(0, roomAhead)
        self.maxBytes = max(1, maxBytes)
        channel = Channel(maxBytes: self.maxBytes, policy: .block, holdsUntilDone: true)
        worker.withLock { $0 = OutputWorker(name: "reel-file-write", channel: channel) { [self] chunks in run(chunks) } }
    }

    deinit {
        assert(worker.withLock { $0 == nil }, "a FileWriteQueue must be closed")
    }

    /// Hands `bytes`, to be written at `offset`, to the writer thread; waits while the queue is
    /// full.
    ///
    /// - Throws: the error number of a write that failed before (nothing is taken then).
    package func enqueue(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Syscall.Errno) {
        if let failure = error { throw failure }
        guard !bytes.isEmpty else { return }
        let chunk = Chunk(offset: offset, bytes: Array(bytes))
        guard channel.send(chunk, weight: ChannelWeight(cost: Int64(bytes.count))) == .queued else {
            // Refused only once a write has failed (the writer cancels the channel then).
            throw error ?? Syscall.Errno(EIO)
        }
    }

    /// Waits until everything taken has been written.
    ///
    /// - Throws: the error number of a write that failed.
    package func drain() throws(Syscall.Errno) {
        channel.waitUntilIdle()
        if let failure = error { throw failure }
    }

    /// Writes what waits (see ``drain()``), ends the writer thread and closes the output.
    /// Returns the error number of a write that failed, if one did. Closing twice does nothing.
    @discardableResult
    package func close() -> Syscall.Errno? {
        let result: Syscall.Errno?
        do { try drain(); result = nil } catch { result = error }
        guard let worker = self.worker.withLock({ w in defer { w = nil }; return w }) else { return result }
        worker.finish()
        if roomAhead > 0 { output.trimKeptRoom() }
        output.close()
        return result
    }

    /// The error number of a write that failed, if one has.
    package var error: Syscall.Errno? { outcome.withLock { $0.failure } }
    /// The bytes waiting to be written (or being written).
    package var queuedBytes: Int64 { channel.pendingCost }
    /// The most bytes that have waited at once.
    package var mostQueuedBytes: Int64 { channel.mostPendingCost }
    /// Whether a caller of ``enqueue(_:at:)`` is waiting for room.
    package var isFull: Bool { channel.hasSendersWaiting }
    /// The bytes written into the output so far.
    package var writtenBytes: Int64 { outcome.withLock { $0.written } }
    /// The bytes of spare room the disk was given back when it filled (the writer went on
    /// into them), if it filled: the disk is full, and the file's owner ends the recording.
    package var roomGivenBack: Int64? { outcome.withLock { $0.givenBack } }

    /// The writer thread: takes the oldest chunk, writes it (outside any lock), then frees its
    /// room; a failed write is kept and cancels the channel, which lets go of what waits.
    private func run(_ chunks: Channel<Chunk>) {
        while let taken = chunks.receiveWeighed() {
            let chunk = taken.element
            keepRoom(through: chunk.offset + Int64(chunk.bytes.count))
            let failed: Syscall.Errno? = chunk.bytes.withUnsafeBytes { bytes in
                do throws(Syscall.Errno) { try output.write(bytes, at: chunk.offset) } catch {
                    // The disk filled: with the file's spare room given back, the write is made again.
                    guard [ENOSPC, EDQUOT].contains(error.rawValue), giveBackSpareRoom() else { return error }
                    do throws(Syscall.Errno) { try output.write(bytes, at: chunk.offset) } catch { return error }
                }
                return nil
            }
            if let failed {
                // Kept before the cancel wakes the callers that will read it.
                outcome.withLock { $0.failure = $0.failure ?? failed }
                chunks.cancel()
            } else {
                outcome.withLock { $0.written += Int64(chunk.bytes.count) }
            }
            chunks.done(taken.weight)
        }
    }

    /// Keeps room for the file beyond `end` (see the type's description) once ``topUpStep`` of
    /// it was used: all of ``roomAhead``, or an eighth where the disk has no more (a nearly
    /// full disk still takes a recording until then); not even that, the disk is full: says so
    /// (``roomGivenBack`` 0) and keeps no more.
    private func keepRoom(through end: Int64) {
        guard roomAhead > 0, let kept = keptUpTo, end + roomAhead - topUpStep > kept else { return }
        var lastError = Syscall.Errno(0)
        for upTo in [end + roomAhead, end + roomAhead / 8] where upTo > kept {
            do throws(Syscall.Errno) {
                try output.keepRoom(max(kept, 0)..<upTo)
                keptUpTo = upTo
                return
            } catch {
                lastError = error
                guard [ENOSPC, EDQUOT].contains(error.rawValue) else { break }
            }
        }
        keptUpTo = nil
        // Elsewhere (a file system that keeps no room) it is written as before.
        if [ENOSPC, EDQUOT].contains(lastError.rawValue) { outcome.withLock { $0.givenBack = $0.givenBack ?? 0 } }
    }

    /// How much of the room kept is used before it is topped up: little (a system call every
    /// 16 KiB written, on this thread), so that a disk another program filled is noticed
    /// within a moment, not megabytes of recording later (the recording went on into its room
    /// for a minute, and was stopped by hand as if nothing had happened); half of a small room.
    private var topUpStep: Int64 { min(roomAhead / 2, 16 << 10) }

    /// Gives the disk the file's spare room back, the first time it fills: whether it did.
    private func giveBackSpareRoom() -> Bool {
        guard !spareGivenBack else { return false }
        spareGivenBack = true
        guard let range = spareRoom?(), !range.isEmpty else { return false }
        do throws(Syscall.Errno) { try output.giveBack(range) } catch { return false }
        outcome.withLock { $0.givenBack = ($0.givenBack ?? 0) + Int64(range.count) }
        return true
    }
}
