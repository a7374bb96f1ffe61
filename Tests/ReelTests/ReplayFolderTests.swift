import Foundation
import Testing
import Reel
import ReelSystem
import ReelTestSupport

/// A folder of replay saves made ready, and what the library does with a folder that a kill
/// left a save in: a complete save hidden under its temporary name gets a dated name, a second
/// name of a save that got its own goes, an unfinished one is pointed at and kept.
@Suite struct ReplayFolderTests {
    func names(_ folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).sorted()
    }

    @Test func aCompleteSaveLeftHiddenByAKillGetsItsDatedName() throws {
        let dir = try TemporaryDirectory()
        let stem = "Reel 2026-12-01 at 03.10.00"
        // Its dated name was taken meanwhile: it gets the next one, and nothing is replaced.
        try Data("someone else's".utf8).write(to: dir.url.appendingPathComponent("\(stem).mp4"))
        let hidden = dir.url.appendingPathComponent(".\(stem).replay-999999-17.mp4")
        try PatternFile.write(hidden, settings: VideoSettings(preset: "ultrafast"))
        let bytes = try Data(contentsOf: hidden)
        _ = try ReplayBuffer.prepareFolder(dir.url)
        #expect(names(dir.url) == ["\(stem) (2).mp4", "\(stem).mp4"])
        #expect(try Data(contentsOf: dir.url.appendingPathComponent("\(stem) (2).mp4")) == bytes, "the save, byte for byte")
        #expect(try String(contentsOf: dir.url.appendingPathComponent("\(stem).mp4"), encoding: .utf8) == "someone else's")
    }

    @Test func aSecondNameOfAPlacedSaveGoesAndAnUnfinishedOneStays() throws {
        let dir = try TemporaryDirectory()
        let placed = dir.url.appendingPathComponent("Reel 2026-12-01 at 03.11.00.mp4")
        try PatternFile.write(placed, settings: VideoSettings(preset: "ultrafast"))
        // A kill between giving the save its name and removing the temporary one.
        let secondName = dir.url.appendingPathComponent(".Reel 2026-12-01 at 03.11.00.replay-999999-1.mp4")
        #expect(link(placed.path, secondName.path) == 0)
        // A kill while writing: no index yet.
        let unfinished = dir.url.appendingPathComponent(".Reel 2026-12-01 at 03.12.00.replay-999999-2.mp4")
        try PatternFile.write(unfinished, settings: VideoSettings(preset: "ultrafast"), finish: false)
        _ = try ReplayBuffer.prepareFolder(dir.url)
        #expect(names(dir.url) == [unfinished.lastPathComponent, placed.lastPathComponent])
        #expect(Recovery.isFinished(placed))
    }

    @Test func theFolderIsMadeAndTheCheckLeavesNothingInIt() throws {
        let dir = try TemporaryDirectory()
        let folder = dir.url.appendingPathComponent("new/replays")
        #expect(try ReplayBuffer.prepareFolder(folder).madeFolder, "made")
        #expect(names(folder).isEmpty, "the check leaves nothing behind")
        #expect(try !ReplayBuffer.prepareFolder(folder).madeFolder, "there already")
    }

    @Test func aReadOnlyFolderIsRefusedAtOnceInTheLibrarysWords() throws {
        let disk = try SmallDisk(size: "1M")
        #expect(try Subprocess.run(["mount", "-o", "remount,ro", disk.url.path]).status == 0)
        #expect {
            _ = try ReplayBuffer.prepareFolder(disk.url)
        } throws: { error in
            let e = error as? ReelError
            return e?.message.contains("read-only") == true && e?.hint?.contains("folder for the replays") == true && e?.hint?.contains("--") == false
        }
    }
}


/// Saving a replay into a folder under a dated name, and reserving dated names for recordings.
@Suite struct DatedNamesTests {
    @Test func manySameSecondRecordingsEachGetTheirOwnName() throws {
        let dir = try TemporaryDirectory()
        let date = Date()
        let urls = try (0..<5).map { _ in try Recorder.reserveDatedFile(in: dir.url, container: .mkv, date: date) }
        #expect(Set(urls).count == 5)
        #expect(urls[1].lastPathComponent.hasSuffix(" (2).mkv"))
        // A reservation nothing was recorded into goes again; one with bytes in it stays.
        try Data("x".utf8).write(to: urls[0])
        #expect(urls.map { Recorder.releaseReservation($0) } == [false, true, true, true, true])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == [urls[0].lastPathComponent])
    }

    @Test func aFolderThatIsNotThereIsSaidInTheLibrarysWords() throws {
        let dir = try TemporaryDirectory()
        #expect {
            _ = try Recorder.reserveDatedFile(in: dir.url.appendingPathComponent("gone"), container: .mp4)
        } throws: { error in
            let e = error as? ReelError
            return e?.message.contains("does not exist") == true && e?.hint?.contains("-o") == false
        }
    }
}
