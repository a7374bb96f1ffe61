import Foundation
import Testing
import ReelCore
import ReelSystem
@testable import ReelFFmpeg
import ReelTestSupport

/// Markers kept beside a recording that was cut off, recovered: those within what could be
/// recovered become chapters; one placed after it (just before a kill, its media never
/// written) is left out of the file and said in the summary. It used to become a chapter past
/// the file's end, and nothing was said.
@Suite(.serialized) struct RecoveredMarkerTests {
    @Test(arguments: [(Container.mp4, false), (.mp4, true), (.mov, false), (.mkv, false), (.mkv, true)])
    func aMarkerPastWhatWasRecoveredIsLeftOutAndSaid(container: Container, elsewhere: Bool) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.\(container.fileExtension)")
        try RecoveryTests.cutOff(url, frames: 90, container: container)
        let file = try #require(FileIdentity(url))
        let kept = Chapter(start: MediaTime(seconds: 0.5), title: "kept")
        let late = Chapter(start: MediaTime(seconds: 600), title: "late one")
        try ChapterSidecar.write([late, kept], of: file, at: url)
        let output = elsewhere ? dir.url.appendingPathComponent("out.\(container.fileExtension)") : nil
        let summary = try Recovery.recover(url, to: output)
        let recovered = output ?? url
        #expect(try MediaProbe.chapters(recovered).map(\.title) == ["kept"])
        #expect(summary.leftOutMarkers == [late])
        #expect(summary.duration < late.start)
    }

    /// An MKV with markers recovered in place on a full disk is ended where it is, with no room
    /// for chapters: the list of its markers stays beside it, untouched, and the summary says
    /// so (all of them left out, the list named). The list was removed with the markers in it.
    @Test func anMKVEndedInPlaceOnAFullDiskKeepsItsMarkerList() throws {
        let disk = try SmallDisk(size: "4M")
        let url = disk.url.appendingPathComponent("full.mkv")
        try RecoveryTests.cutOff(url, frames: 90, container: .mkv)
        let file = try #require(FileIdentity(url))
        let markers = [Chapter(start: MediaTime(seconds: 0.5), title: "one"), Chapter(start: MediaTime(seconds: 1.5), title: "two")]
        try ChapterSidecar.write(markers, of: file, at: url)
        let list = ChapterSidecar.url(for: url)
        let kept = try Data(contentsOf: list)
        _ = try Subprocess.run(["sh", "-c", "cat /dev/zero > '\(disk.url.appendingPathComponent("filler").path)'"])
        let summary = try Recovery.recover(url)
        #expect(summary.finalisation == .inPlace(bytesWritten: summary.finalisation.bytesWritten), "ended in place: \(summary)")
        #expect(Recovery.isFinished(url))
        #expect(try MediaProbe.chapters(url).isEmpty)
        #expect(summary.leftOutMarkers == markers)
        #expect(summary.keptMarkerList == list)
        #expect((try? Data(contentsOf: list)) == kept, "the list stays as it was")
        #expect(ChapterSidecar.read(for: url) == markers, "and is still the file's")
    }

    /// The list of a cut-off recording is found by the file it names, not by the name: renamed
    /// in its folder, the recording is recovered with its markers (it had none: the list is
    /// looked for beside the new name), and a new recording's claim on the old name (here as a
    /// `MovieFileSink` makes it) moves the list beside the renamed file instead of deleting it.
    @Test(arguments: [false, true])
    func aRenamedCutOffRecordingKeepsItsMarkers(newRecordingAtTheOldName: Bool) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("r.mp4")
        let renamed = dir.url.appendingPathComponent("renamed.mp4")
        try RecoveryTests.cutOff(url, frames: 90, container: .mp4)
        let file = try #require(FileIdentity(url))
        let markers = [Chapter(start: MediaTime(seconds: 0.5), title: "one"), Chapter(start: MediaTime(seconds: 1.5), title: "two")]
        try ChapterSidecar.write(markers, of: file, at: url)
        try FileManager.default.moveItem(at: url, to: renamed)
        #expect(ChapterSidecar.read(for: renamed) == markers)
        #expect(ChapterSidecar.read(for: url).isEmpty, "no file at the old name: no markers of it")
        if newRecordingAtTheOldName {
            try Data("a new recording".utf8).write(to: url)
            ChapterSidecar.remove(for: url, unlessOf: FileIdentity(url))
            #expect(!FileManager.default.fileExists(atPath: ChapterSidecar.url(for: url).path), "out of the new recording's way")
            #expect(FileManager.default.fileExists(atPath: ChapterSidecar.url(for: renamed).path), "moved beside the renamed file")
        }
        let summary = try Recovery.recover(renamed)
        #expect(summary.leftOutMarkers.isEmpty)
        #expect(try MediaProbe.chapters(renamed).map(\.title) == ["one", "two"])
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasSuffix(".chapters") }
        #expect(left.isEmpty, "the list goes once the file holds its markers: \(left)")
    }

    /// A list beside a name whose file is gone from the folder (deleted, or overwritten by the
    /// recording now there) is of no file: a new recording at the name removes it.
    @Test func aListOfAFileNoLongerThereGoesWithANewRecording() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("gone.mp4")
        try Data("deleted later".utf8).write(to: url)
        let file = try #require(FileIdentity(url))
        try ChapterSidecar.write([Chapter(start: MediaTime(seconds: 1), title: "old")], of: file, at: url)
        // Made before the old one goes, so that it cannot be given the old one's inode.
        let new = dir.url.appendingPathComponent("new")
        try Data("a new recording".utf8).write(to: new)
        try FileManager.default.removeItem(at: url)
        try FileManager.default.moveItem(at: new, to: url)
        ChapterSidecar.remove(for: url, unlessOf: FileIdentity(url))
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasSuffix(".chapters") }
        #expect(left.isEmpty, "\(left)")
    }

    /// A chapter list never holds a chapter that begins at or past the end it is given.
    @Test func chaptersBeginBeforeTheEnd() {
        let chapters = [Chapter(start: MediaTime(seconds: 3), title: "c"), Chapter(start: MediaTime(seconds: 1), title: "a"),
                        Chapter(start: MediaTime(seconds: 2), title: "b")]
        #expect(Chapter.beginning(chapters, before: MediaTime(seconds: 2)).map(\.title) == ["a"])
        #expect(Chapter.beginning(chapters, before: MediaTime(seconds: 9)).map(\.title) == ["a", "b", "c"])
    }
}
