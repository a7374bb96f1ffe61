import Foundation
import Testing
import ReelCore
@testable import ReelFFmpeg
import ReelTestSupport

/// Recovering recordings as crashes, kills and full disks leave them: only what was completely
/// written is kept, nothing recorded is lost on the way, a file being written is left alone.
@Suite(.serialized) struct RecoveryTests {
    /// A recording of `frames` frames left as a kill leaves it: its complete fragments (MP4/MOV)
    /// or clusters (MKV), never finalised.
    static func cutOff(_ url: URL, frames: Int = 120, container: Container? = nil) throws {
        let writer = try InPlaceFinaliseTests.writer(url, container: container, preset: "ultrafast")
        try InPlaceFinaliseTests.feed(writer, frames: frames)
        writer.abandon()
    }

    /// Whether another open file description holds a lock on `url` (a shared lock is refused).
    static func isLocked(_ url: URL) -> Bool {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_SH | LOCK_NB) == 0 else { return errno == EWOULDBLOCK }
        flock(fd, LOCK_UN)
        return false
    }

    /// Where each video packet of `url` lies in the file, as ffprobe reads it.
    static func videoPacketExtents(_ url: URL) throws -> [(pos: Int64, size: Int64)] {
        let r = try Subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pos,size",
                                    "-of", "csv=p=0", url.path])
        return r.output.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count == 2, let size = Int64(fields[0]), let pos = Int64(fields[1]) else { return nil }
            return (pos, size)
        }
    }

    /// `ffmpeg -v error` decoding all of `url`: what it printed (nothing for a clean file).
    static func decodeErrors(_ url: URL) throws -> String {
        let r = try Subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", url.path, "-f", "null", "-"])
        return r.status == 0 ? r.stderr : "exit \(r.status): \(r.stderr)"
    }

    static func inode(_ url: URL) -> ino_t {
        var s = stat()
        return stat(url.path, &s) == 0 ? s.st_ino : 0
    }

    // MARK: Files being written

    /// The writer of a recording holds an advisory lock on its file from its creation until it
    /// is finalised, in place or by a copy that takes its place.
    @Test(arguments: [Container.mp4, .mkv], [true, false])
    func aWriterHoldsItsFileLockedUntilItIsFinalised(_ container: Container, _ finalisedByCopying: Bool) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("live.\(container.fileExtension)")
        let writer = try InPlaceFinaliseTests.writer(url, container: container, preset: "ultrafast") {
            if finalisedByCopying { $0.indexReservation = 0 } else { $0.expectedDuration = MediaTime(value: 2, timescale: 1) }
        }
        #expect(Self.isLocked(url), "locked from creation")
        try InPlaceFinaliseTests.feed(writer, frames: 45)
        #expect(Self.isLocked(url))
        let summary = try writer.finish()
        #expect(summary.finalisation.isInPlace == (container != .mkv && !finalisedByCopying), "\(summary.finalisation)")
        #expect(!Self.isLocked(url), "released once finalised")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == [url.lastPathComponent], "no temporary file left")
        #expect(try Self.decodeErrors(url) == "")
    }

    /// Nobody may replace a file being recorded by creating a file over it.
    @Test func aFileBeingWrittenIsNotOverwritten() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("live.mp4")
        let writer = try InPlaceFinaliseTests.writer(url, preset: "ultrafast")
        try InPlaceFinaliseTests.feed(writer, frames: 30)
        let before = try Data(contentsOf: url)
        #expect(throws: ReelError.self) {
            _ = try InPlaceFinaliseTests.writer(url, preset: "ultrafast") { $0.overwrite = true }
        }
        #expect(try Data(contentsOf: url) == before, "not truncated")
        _ = try writer.finish()
    }
}
