import Foundation
import Synchronization
import Testing
import ReelCore
import ReelFFmpeg
import ReelSystem
import ReelTestSupport

/// A recording's file written by a thread of its own (``FileWriteQueue``): a disk that stalls
/// does not hold up encoding until the queue's byte bound is reached, a full disk ends the
/// recording with the error it always did, and finishing writes everything that waits.
///
/// The stalled disk is the real file behind a ``HeldFileOutput``, whose writes wait while the
/// test holds them; the full disk is a real small tmpfs. Frames are appended at explicit times
/// (no clock), and the file's frames are counted by the test pattern's burned-in counter.
@Suite struct FileWriteQueueTests {
    let size = PixelSize(width: 320, height: 240)

    func configuration(_ url: URL, writeBufferSize: Int64, crf: Int = 23) -> AssetWriter.Configuration {
        var video = VideoSettings(codec: .h264)
        video.preset = "ultrafast"
        video.rateControl = .crf(crf)
        var configuration = AssetWriter.Configuration(url: url, video: AssetWriter.VideoTrack(settings: video, inputFormat: .yuv420p, inputSize: size),
                                                      expectedDuration: MediaTime(value: 60, timescale: 1))
        configuration.writeBufferSize = writeBufferSize
        return configuration
    }

    /// Appends test-pattern frames `range` on the frame grid of 30 fps.
    func append(_ range: Range<Int>, to writer: AssetWriter, pool: FramePool, appended: Counter? = nil) throws {
        for i in range {
            let frame = try #require(pool.makeFrame())
            try TestPattern.draw(index: Int64(i), flash: false, into: frame)
            try writer.appendVideo(frame, at: FrameRate(30).time(ofFrame: Int64(i)))
            appended?.add()
        }
    }

    /// Waits (up to a minute, for a loaded machine) until `condition` holds.
    func waitUntil(_ what: String, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(60)
        while !condition() {
            try #require(Date() < deadline, "timed out waiting until \(what)")
            usleep(2_000)
        }
    }

    /// Runs `body` on a thread of its own; the returned box holds its outcome once it is done.
    func onThread(_ body: @escaping @Sendable () throws -> Void) -> Outcome {
        let outcome = Outcome()
        Thread.detachNewThread {
            do { try body(); outcome.set(nil) } catch { outcome.set(error) }
        }
        return outcome
    }

    final class Counter: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    final class Outcome: Sendable {
        private let state = Mutex<(done: Bool, error: String?)>((false, nil))
        func set(_ error: (any Error)?) { state.withLock { $0 = (true, error.map { "\($0)" }) } }
        var isDone: Bool { state.withLock { $0.done } }
        var error: String? { state.withLock { $0.error } }
    }

    @Test func encodingGoesOnWhileTheDiskIsStuckUpToTheByteBound() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("stuck.mp4")
        let bound: Int64 = 256 << 10
        let held = Mutex<HeldFileOutput?>(nil)
        let writer = try AssetWriter(configuration: configuration(url, writeBufferSize: bound)) { output in
            let wrapped = HeldFileOutput(output)
            held.withLock { $0 = wrapped }
            return wrapped
        }
        let output = try #require(held.withLock { $0 })
        let queue = try #require(writer.writeQueue)
        #expect(queue.maxBytes == bound)
        // The header is on the disk; from now on the disk takes nothing.
        try queue.drain()
        let onDisk = queue.writtenBytes
        output.hold()
        let pool = FramePool(format: .yuv420p, size: size, capacity: 4)
        let total = 900
        let appended = Counter()
        let appending = onThread { try append(0..<total, to: writer, pool: pool, appended: appended) }
        try waitUntil("the queue is full and the encoder waits for room") { queue.isFull || appending.isDone }
        let whileStuck = appended.value
        #expect(!appending.isDone, "\(total) frames fitted in \(bound) bytes: the test proves nothing (\(appending.error ?? "no error"))")
        #expect(output.isHoldingAWrite, "the writer is stuck in a write")
        #expect(queue.writtenBytes == onDisk, "nothing more reached the disk")
        // The encoder kept taking frames while the writer was stuck: several fragments' worth
        // (a fragment is half a second, 15 frames), as many as the bound holds.
        #expect(whileStuck > 45, "only \(whileStuck) frames were encoded while the disk was stuck")
        #expect(queue.queuedBytes > bound / 2 && queue.mostQueuedBytes <= bound,
                "\(queue.queuedBytes) bytes wait (at most \(queue.mostQueuedBytes)), bound \(bound)")
        // Still stuck: the encoder waits, it does not go on past the bound or drop anything.
        usleep(200_000)
        #expect(appended.value == whileStuck)
        output.release()
        try waitUntil("every frame is appended") { appending.isDone }
        #expect(appending.error == nil)
        let summary = try writer.finish()
        #expect(summary.videoFrames == Int64(total))
        let counters = try MediaProbe.decodeLuma(url, width: size.width, height: size.height).map(\.counter)
        #expect(counters == (0..<total).map { Int64($0) }, "every frame in the file, in order")
    }

    @Test func finishingWritesEverythingThatWaits() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("drain.mp4")
        let held = Mutex<HeldFileOutput?>(nil)
        let writer = try AssetWriter(configuration: configuration(url, writeBufferSize: FileWriteQueue.defaultMaxBytes)) { output in
            let wrapped = HeldFileOutput(output)
            held.withLock { $0 = wrapped }
            return wrapped
        }
        let output = try #require(held.withLock { $0 })
        let queue = try #require(writer.writeQueue)
        output.hold()
        let pool = FramePool(format: .yuv420p, size: size, capacity: 4)
        // 10 s of video: all of it taken while the disk takes nothing.
        try append(0..<300, to: writer, pool: pool)
        #expect(!queue.isFull)
        #expect(queue.queuedBytes > 0)
        let summary = Mutex<AssetWriter.Summary?>(nil)
        let finishing = onThread { let s = try writer.finish(); summary.withLock { $0 = s } }
        try waitUntil("the writer is stuck in a write") { output.isHoldingAWrite }
        usleep(100_000)
        #expect(!finishing.isDone, "finished while bytes still waited for the disk")
        output.release()
        try waitUntil("the writer has finished") { finishing.isDone }
        #expect(finishing.error == nil)
        #expect(summary.withLock { $0?.videoFrames } == 300)
        #expect(summary.withLock { $0?.finalisation.isInPlace } == true)
        let counters = try MediaProbe.decodeLuma(url, width: size.width, height: size.height).map(\.counter)
        #expect(counters == (0..<300).map { Int64($0) }, "every frame in the file, in order")
    }

    /// Opening a recording's file (what a recorder does while its session starts, before the
    /// sources start) does not wait for the disk: the header and the space kept for the index
    /// (hundreds of KB for an hour) go to the writer thread.
    @Test func openingAWriterDoesNotWaitForTheDisk() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("open.mp4")
        let held = Mutex<HeldFileOutput?>(nil)
        var settings = configuration(url, writeBufferSize: FileWriteQueue.defaultMaxBytes)
        settings.expectedDuration = nil  // an hour's index kept
        let writer = try AssetWriter(configuration: settings) { output in
            let wrapped = HeldFileOutput(output)
            wrapped.hold()
            held.withLock { $0 = wrapped }
            return wrapped
        }
        let output = try #require(held.withLock { $0 })
        let queue = try #require(writer.writeQueue)
        #expect(queue.writtenBytes == 0, "nothing reached the disk")
        #expect(queue.queuedBytes == writer.bytesWritten && queue.queuedBytes > 100_000,
                "\(queue.queuedBytes) bytes of header and index space wait")
        output.release()
        let pool = FramePool(format: .yuv420p, size: size, capacity: 4)
        try append(0..<30, to: writer, pool: pool)
        #expect(try writer.finish().videoFrames == 30)
        let counters = try MediaProbe.decodeLuma(url, width: size.width, height: size.height).map(\.counter)
        #expect(counters == (0..<30).map { Int64($0) })
    }

    /// Replacing a file: the new recording takes the file's name only once its first fragment
    /// is on the disk, not when it is queued (a kill in between would leave neither recording).
    @Test func aReplacedFileStaysUntilTheNewFirstFragmentIsOnTheDisk() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("replace.mp4")
        try Data("the old recording".utf8).write(to: url)
        let held = Mutex<HeldFileOutput?>(nil)
        var settings = configuration(url, writeBufferSize: FileWriteQueue.defaultMaxBytes)
        settings.overwrite = true
        let writer = try AssetWriter(configuration: settings) { output in
            let wrapped = HeldFileOutput(output)
            held.withLock { $0 = wrapped }
            return wrapped
        }
        let output = try #require(held.withLock { $0 })
        let queue = try #require(writer.writeQueue)
        try queue.drain()
        output.hold()
        let pool = FramePool(format: .yuv420p, size: size, capacity: 4)
        // Two fragments (half a second each) handed over, none on the disk.
        try append(0..<40, to: writer, pool: pool)
        #expect(queue.queuedBytes > 0)
        #expect(writer.url != url, "the new recording took the name with nothing of it on the disk")
        #expect(try Data(contentsOf: url) == Data("the old recording".utf8))
        output.release()
        try queue.drain()
        try append(40..<41, to: writer, pool: pool)
        #expect(writer.url == url, "the new recording's first fragment is on the disk: it takes the name")
        #expect(try writer.finish().videoFrames == 41)
        let counters = try MediaProbe.decodeLuma(url, width: size.width, height: size.height).map(\.counter)
        #expect(counters == (0..<41).map { Int64($0) })
    }

    /// A recording abandoned (an error) while its first fragment waited for the disk: closing
    /// writes it, and the new file then takes the name as it would have with its next packet.
    @Test func anAbandonedReplacementWhoseFragmentReachedTheDiskTakesTheName() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("abandon.mp4")
        try Data("the old recording".utf8).write(to: url)
        var settings = configuration(url, writeBufferSize: FileWriteQueue.defaultMaxBytes)
        settings.overwrite = true
        let held = Mutex<HeldFileOutput?>(nil)
        let writer = try AssetWriter(configuration: settings) { output in
            let wrapped = HeldFileOutput(output)
            wrapped.hold()
            held.withLock { $0 = wrapped }
            return wrapped
        }
        let pool = FramePool(format: .yuv420p, size: size, capacity: 4)
        try append(0..<40, to: writer, pool: pool)
        #expect(writer.url != url)
        held.withLock { $0?.release() }
        writer.cancelWriting()
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.url.path)
        #expect(names == ["abandon.mp4"], "\(names)")
        let counters = try MediaProbe.decodeLuma(url, width: size.width, height: size.height).compactMap(\.counter)
        #expect(counters.count >= 15 && counters == (0..<counters.count).map { Int64($0) }, "\(counters)")
    }

    /// A full disk, with the file written on the encoding thread (0) and by the writer thread:
    /// the same error (code, message: the file finalised in place with what reached the disk,
    /// what it keeps), and the frames written before it stay in the file, which plays.
    @Test(arguments: [0, FileWriteQueue.defaultMaxBytes])
    func aFullDiskEndsTheRecordingWithTheSameError(_ writeBufferSize: Int64) throws {
        let disk = try SmallDisk(size: "1M")
        let url = disk.url.appendingPathComponent("full.mp4")
        let writer = try AssetWriter(configuration: configuration(url, writeBufferSize: writeBufferSize, crf: 8))
        #expect((writer.writeQueue != nil) == (writeBufferSize > 0))
        let pool = FramePool(format: .yuv420p, size: size, capacity: 4)
        var failure: ReelError?
        var frames = 0
        do {
            for i in 0..<9000 {
                try append(i..<(i + 1), to: writer, pool: pool)
                frames += 1
            }
            _ = try writer.finish()
        } catch let error as ReelError {
            failure = error
        }
        writer.cancelWriting()
        let error = try #require(failure, "1 MB filled up after \(frames) frames")
        #expect(error.code == .insufficientStorage)
        #expect(error.message.hasPrefix("the disk filled while \(url.path) was recorded, which ended the recording: it keeps the first "), "\(error.message)")
        #expect(error.hint == "free some disk space or record to another disk", "\(error.hint ?? "no hint")")
        #expect(Recovery.isFinished(url))
        // What reached the disk stays: complete fragments, from the first frame on.
        let counters = try MediaProbe.decodeLuma(url, width: size.width, height: size.height).compactMap(\.counter)
        #expect(counters.count >= 15, "\(counters.count) frames kept of \(frames)")
        #expect(counters == (0..<counters.count).map { Int64($0) })
    }

    @Test func aChunkBiggerThanTheBoundIsTakenWhenNothingWaits() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("chunks")
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        try #require(fd >= 0)
        let queue = FileWriteQueue(output: SystemFileOutput(fd: fd), maxBytes: 16)
        let big = [UInt8](repeating: 7, count: 100)
        func enqueue(_ bytes: [UInt8], at offset: Int64) -> Syscall.Errno? {
            bytes.withUnsafeBytes { buffer in
                do throws(Syscall.Errno) { try queue.enqueue(buffer, at: offset) } catch { return error }
                return nil
            }
        }
        #expect(enqueue(big, at: 0) == nil)
        // Written where they belong, a later one before an earlier one (a muxer seeks back).
        #expect(enqueue([1, 1, 1, 1], at: 100) == nil)
        #expect(enqueue([9, 9, 9, 9], at: 10) == nil)
        #expect(queue.close() == nil)
        #expect(queue.mostQueuedBytes <= 100)
        #expect(queue.writtenBytes == 108)
        var expected = big + [1, 1, 1, 1]
        expected.replaceSubrange(10..<14, with: [9, 9, 9, 9])
        #expect(try Data(contentsOf: url) == Data(expected))
    }
    /// Room kept ahead of a file without an index reservation: topped up as the writes near
    /// its end; when the disk can keep no more, the writes go on into the room kept and
    /// ``FileWriteQueue/roomGivenBack`` says 0 (the owner ends the recording for the disk);
    /// the room no write used is given back at the close.
    @Test func roomKeptAheadIsToppedUpAndSaysWhenTheDiskIsFull() throws {
        let output = RoomKeepingOutput(diskEnd: 3000)
        let queue = FileWriteQueue(output: output, roomAhead: 1000)
        let chunk = [UInt8](repeating: 1, count: 400)
        for i in 0..<4 {
            chunk.withUnsafeBytes { bytes in try? queue.enqueue(bytes, at: Int64(i) * 400) }
        }
        try queue.drain()
        #expect(queue.roomGivenBack == nil, "room kept up to \(output.keptRanges)")
        #expect(output.keptRanges.first == 0..<1400 && output.keptRanges.last == 1400..<2200, "\(output.keptRanges)")
        // On: past what the disk can keep, said once; the writes into the room kept succeed.
        for i in 4..<7 {
            chunk.withUnsafeBytes { bytes in try? queue.enqueue(bytes, at: Int64(i) * 400) }
        }
        try queue.drain()
        #expect(queue.roomGivenBack == 0 && queue.error == nil)
        #expect(queue.writtenBytes == 2800 && output.keptRanges.last == 2200..<3000, "\(output.keptRanges)")
        #expect(queue.close() == nil)
        #expect(output.trimmed)

        // A nearly full disk: an eighth of the room is kept while it can be, and the recording
        // goes on until not even that can.
        let small = RoomKeepingOutput(diskEnd: 1300)
        let nearlyFull = FileWriteQueue(output: small, roomAhead: 1000)
        for i in 0..<2 {
            chunk.withUnsafeBytes { bytes in try? nearlyFull.enqueue(bytes, at: Int64(i) * 400) }
        }
        try nearlyFull.drain()
        #expect(nearlyFull.roomGivenBack == nil && small.keptRanges == [0..<525, 525..<925], "\(small.keptRanges)")
        chunk.withUnsafeBytes { bytes in try? nearlyFull.enqueue(bytes, at: 800) }
        try nearlyFull.drain()
        #expect(nearlyFull.roomGivenBack == 0 && nearlyFull.writtenBytes == 1200)
        #expect(nearlyFull.close() == nil)
    }

}

/// An output whose disk keeps room up to `diskEnd` and no further; its writes go nowhere.
final class RoomKeepingOutput: FileOutput, @unchecked Sendable {
    private let diskEnd: Int64
    private(set) var keptRanges: [Range<Int64>] = []
    private(set) var trimmed = false

    init(diskEnd: Int64) { self.diskEnd = diskEnd }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Syscall.Errno) {}
    func close() {}
    func keepRoom(_ range: Range<Int64>) throws(Syscall.Errno) {
        guard range.upperBound <= diskEnd else { throw Syscall.Errno(ENOSPC) }
        keptRanges.append(range)
    }
    func trimKeptRoom() { trimmed = true }
}

/// The file's output with writes that wait while the test holds them (a disk that stalls).
final class HeldFileOutput: FileOutput, @unchecked Sendable {
    private let inner: any FileOutput
    private let condition = NSCondition()
    private var held = false
    private var holding = false

    init(_ inner: any FileOutput) { self.inner = inner }

    /// Makes writes from now on wait until ``release()``.
    func hold() { condition.lock(); held = true; condition.unlock() }

    func release() {
        condition.lock()
        held = false
        condition.broadcast()
        condition.unlock()
    }

    /// Whether a write is waiting to be let through.
    var isHoldingAWrite: Bool { condition.lock(); defer { condition.unlock() }; return holding }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Syscall.Errno) {
        condition.lock()
        while held {
            holding = true
            condition.wait()
        }
        holding = false
        condition.unlock()
        try inner.write(bytes, at: offset)
    }

    func close() { inner.close() }
}
