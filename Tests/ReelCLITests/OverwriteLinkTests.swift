import Foundation
import Testing
import Reel
import ReelTestSupport

/// `--overwrite` with an output that is a symbolic link: the file the link leads to is
/// replaced as any file is (only once the recording holds something), the link stays and
/// leads to the new file; an output that leads to a file the command reads is refused.
@Suite(.serialized, .tags(.realTime)) struct OverwriteLinkTests {
    let quick = ["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--duration", "0.5"]
    static let old = Data("the file the link leads to\n".utf8)

    /// A folder with `target.mp4` (a few bytes of its own) and `link.mp4` leading to it.
    static func linkedFolder() throws -> (TemporaryDirectory, target: URL, link: URL) {
        let dir = try TemporaryDirectory()
        let target = dir.url.appendingPathComponent("target.mp4"), link = dir.url.appendingPathComponent("link.mp4")
        try old.write(to: target)
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "target.mp4")
        return (dir, target, link)
    }

    @Test func aRecordingReplacesTheFileTheLinkLeadsTo() throws {
        let (dir, target, link) = try Self.linkedFolder()
        let r = try ReelBinary.run(quick + ["--overwrite", "-o", link.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == "target.mp4", "the link stays")
        #expect(!Recovery.isCutOff(target))
        #expect((try MediaProbe.probe(target).videoStreams.first?.frameCount ?? 0) >= 10)
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dir.url.path)) == ["target.mp4", "link.mp4"])
    }

    /// A recording that records nothing (its first frame, a picture of noise, does not fit the size limit) leaves the
    /// file the link leads to as it was, and the link (the file was opened through the link and
    /// emptied at the start, and the link itself was deleted at the end).
    @Test func aRecordingOfNothingLeavesTheLinkAndItsFile() throws {
        let (dir, target, link) = try Self.linkedFolder()
        let camera = try MaxSizeCommandTests.noiseCamera(in: dir)
        let r = try ReelBinary.run(["record", "--camera=\(camera.path)", "--max-size", "300k", "--overwrite", "-o", link.path])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("first frame alone is larger than the size limit"), "\(r.stderr)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == "target.mp4", "the link stays")
        #expect((try? Data(contentsOf: target)) == Self.old, "the file the link leads to is untouched")
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dir.url.path)) == ["target.mp4", "link.mp4", "noise.mkv"])
    }

    /// An output that leads, through a link, to a file the command reads is refused, and the
    /// file is untouched: a file camera's file, a merge's clip, the recording a recovery reads.
    @Test func anOutputLeadingToAnInputIsRefused() throws {
        let dir = try TemporaryDirectory()
        let clip = dir.url.appendingPathComponent("clip.mp4")
        let made = try ReelBinary.run(quick + ["-o", clip.path])
        #expect(made.status == 0, "\(made.stderr)")
        let before = try Data(contentsOf: clip)
        let link = dir.url.appendingPathComponent("link.mp4")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: clip.path)

        let camera = try ReelBinary.run(["record", "--camera=\(clip.path)", "--duration", "0.5", "--overwrite", "-o", link.path])
        #expect(camera.status == 2 && camera.stderr.contains("is the file played as a camera"), "\(camera.stderr)")
        let merge = try ReelBinary.run(["merge", clip.path, clip.path, "--overwrite", "-o", link.path])
        #expect(merge.status != 0 && merge.stderr.contains("is clip 1"), "\(merge.stderr)")
        let recover = try ReelBinary.run(["recover", clip.path, "--overwrite", "-o", link.path])
        #expect(recover.status != 0 && recover.stderr.contains("is the recording"), "\(recover.stderr)")
        #expect(try Data(contentsOf: clip) == before, "the input is untouched")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == clip.path)
    }

    /// `reel merge --overwrite` through a link replaces the file it leads to, as a recording
    /// does (it renamed the merged file over the link itself).
    @Test func aMergeReplacesTheFileTheLinkLeadsTo() throws {
        let (dir, target, link) = try Self.linkedFolder()
        let clip = dir.url.appendingPathComponent("clip.mp4")
        let made = try ReelBinary.run(quick + ["-o", clip.path])
        #expect(made.status == 0, "\(made.stderr)")
        let merge = try ReelBinary.run(["merge", clip.path, clip.path, "--overwrite", "-o", link.path])
        #expect(merge.status == 0, "\(merge.stderr)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == "target.mp4", "the link stays")
        #expect((try MediaProbe.probe(target).videoStreams.first?.frameCount ?? 0) >= 20)
    }

    @Test func helpSaysWhatOverwriteDoesWithALink() throws {
        for command in ["record", "merge", "recover"] {
            let r = try ReelBinary.run([command, "--help"])
            let words = r.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(words.contains("a symbolic link is followed"), "\(command): \(r.output)")
        }
    }
}
