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

    /// A chapter list never holds a chapter that begins at or past the end it is given.
    @Test func chaptersBeginBeforeTheEnd() {
        let chapters = [Chapter(start: MediaTime(seconds: 3), title: "c"), Chapter(start: MediaTime(seconds: 1), title: "a"),
                        Chapter(start: MediaTime(seconds: 2), title: "b")]
        #expect(Chapter.beginning(chapters, before: MediaTime(seconds: 2)).map(\.title) == ["a"])
        #expect(Chapter.beginning(chapters, before: MediaTime(seconds: 9)).map(\.title) == ["a", "b", "c"])
    }
}
