import Foundation
import Synchronization
import Testing
import ReelCore
import ReelFFmpeg
import ReelSystem
import ReelTestSupport

/// A disk that fills while a fragmented MP4 is written: the file's index reservation holds
/// room its index will not need (zeros nothing reads), which the disk gets back, so that the
/// recording's last part reaches the disk instead of being lost, and the index still fits.
///
/// The writer thread's side runs against a scripted output that finds the disk full on cue;
/// the whole of it against a real small tmpfs, frames appended at explicit times (no clock),
/// counted by the test pattern's burned-in counter.
@Suite struct SpareIndexRoomTests {
    let size = PixelSize(width: 320, height: 240)

    /// A file whose writes find the disk full while ``full`` is set, until room is given back.
    final class FullDiskOutput: FileOutput, @unchecked Sendable {
        private let inner: any FileOutput
        private let lock = NSLock()
        private var isFull = false
        private var givenBack: [Range<Int64>] = []

        init(_ inner: any FileOutput) { self.inner = inner }

        /// The disk fills: writes fail with `ENOSPC` until room is given back.
        func fill() { lock.withLock { isFull = true } }
        var ranges: [Range<Int64>] { lock.withLock { givenBack } }

        func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Syscall.Errno) {
            if lock.withLock({ isFull }) { throw Syscall.Errno(ENOSPC) }
            try inner.write(bytes, at: offset)
        }

        func giveBack(_ range: Range<Int64>) throws(Syscall.Errno) {
            lock.withLock { givenBack.append(range); isFull = false }
        }

        func close() { inner.close() }
    }

    func enqueue(_ bytes: [UInt8], at offset: Int64, into queue: FileWriteQueue) -> Syscall.Errno? {
        bytes.withUnsafeBytes { buffer in
            do throws(Syscall.Errno) { try queue.enqueue(buffer, at: offset); try queue.drain() } catch { return error }
            return nil
        }
    }

    func output(_ dir: TemporaryDirectory) throws -> (FullDiskOutput, URL) {
        let url = dir.url.appendingPathComponent("file")
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        try #require(fd >= 0)
        return (FullDiskOutput(SystemFileOutput(fd: fd)), url)
    }

    /// The first write that finds the disk full gives the spare room back and is made again:
    /// nothing is lost, and the queue says the disk filled. The second fails as any write
    /// (the disk is given back its room once: no loop).
    @Test func aFullDiskGetsTheSpareRoomOnceAndTheWriteIsMadeAgain() throws {
        let dir = try TemporaryDirectory()
        let (disk, url) = try output(dir)
        let queue = FileWriteQueue(output: disk, spareRoom: { 4096..<65536 })
        #expect(enqueue([1, 2, 3], at: 0, into: queue) == nil)
        #expect(queue.roomGivenBack == nil)
        disk.fill()
        #expect(enqueue([4, 5], at: 3, into: queue) == nil, "made again once the room was given back")
        #expect(disk.ranges == [4096..<65536])
        #expect(queue.roomGivenBack == 61440)
        disk.fill()
        #expect(enqueue([6], at: 5, into: queue) == Syscall.Errno(ENOSPC), "the room is given back once")
        #expect(disk.ranges.count == 1)
        #expect(queue.close() == Syscall.Errno(ENOSPC))
        #expect(try Data(contentsOf: url) == Data([1, 2, 3, 4, 5]))
    }

    /// Without spare room (a file that reserved none, or none the index does not need), a
    /// full disk fails the write as it always did.
    @Test(arguments: [false, true])
    func withoutSpareRoomAFullDiskFailsTheWrite(_ emptyRange: Bool) throws {
        let dir = try TemporaryDirectory()
        let (disk, _) = try output(dir)
        let queue = emptyRange ? FileWriteQueue(output: disk, spareRoom: { nil }) : FileWriteQueue(output: disk)
        disk.fill()
        #expect(enqueue([1], at: 0, into: queue) == Syscall.Errno(ENOSPC))
        #expect(disk.ranges.isEmpty && queue.roomGivenBack == nil)
        queue.close()
    }

    /// The file system makes the hole: the range reads as zeros and takes no room.
    @Test func aPunchedHoleReadsAsZerosAndFreesItsBlocks() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("holes")
        try Data(repeating: 0, count: 1 << 20).write(to: url)
        let fd = open(url.path, O_RDWR | O_CLOEXEC)
        try #require(fd >= 0)
        defer { Syscall.close(fd) }
        func blocks() -> Int64 { var s = stat(); fstat(fd, &s); return Int64(s.st_blocks) * 512 }
        let before = blocks()
        #expect(throws: Never.self) { try Syscall.punchHole(fd, range: 65536..<(1 << 20)).get() }
        #expect(before - blocks() >= (1 << 20) - 65536, "\(before) → \(blocks()) bytes allocated")
        #expect(try Data(contentsOf: url) == Data(repeating: 0, count: 1 << 20), "the file reads the same")
    }

    /// A real disk that fills while an MP4 is written with an hour's index reservation: the
    /// frames appended after are written into the room the index does not need, the finish
    /// writes the last fragment and finalises the file, and the file holds every
    /// frame. (It lost the last fragment, "the last 0.50 s recorded could not be written".)
    @Test func aDiskThatFillsBeforeTheFinishLosesNothing() throws {
        let disk = try SmallDisk(size: "8M")
        let url = disk.url.appendingPathComponent("full.mp4")
        var video = VideoSettings(codec: .h264)
        video.preset = "ultrafast"
        let configuration = AssetWriter.Configuration(url: url, video: AssetWriter.VideoTrack(settings: video, inputFormat: .yuv420p, inputSize: size))
        let writer = try AssetWriter(configuration: configuration)
        let pool = FramePool(format: .yuv420p, size: size, capacity: 4)
        func append(_ range: Range<Int>) throws {
            for i in range {
                let frame = try #require(pool.makeFrame())
                try TestPattern.draw(index: Int64(i), flash: false, into: frame)
                try writer.appendVideo(frame, at: FrameRate(30).time(ofFrame: Int64(i)))
            }
        }
        try append(0..<60)
        try writer.writeQueue?.drain()
        // Everything left on the disk taken by someone else's file.
        _ = try Subprocess.run(["sh", "-c", "cat /dev/zero > '\(disk.url.appendingPathComponent("filler").path)'"])
        try append(60..<75)
        let summary = try writer.finish()
        #expect(summary.videoFrames == 75)
        #expect(Recovery.isFinished(url))
        let counters = try MediaProbe.decodeLuma(url, width: size.width, height: size.height).map(\.counter)
        #expect(counters == (0..<75).map { Int64($0) }, "\(counters)")
    }
}
