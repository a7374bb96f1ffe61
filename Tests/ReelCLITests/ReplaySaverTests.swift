import Foundation
import Testing
import Reel
import ReelSystem
import ReelTestSupport
@testable import ReelCLI

/// Where `reel record --replay` puts its saves, and what it does with a folder that a kill
/// left a save in: a complete save hidden under its temporary name gets a dated name, a second
/// name of a save that got its own goes, an unfinished one is pointed at and kept.
@Suite struct ReplaySaverTests {
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
        _ = try ReplaySaver.prepareFolder(dir.url, console: Console(isTerminal: false))
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
        _ = try ReplaySaver.prepareFolder(dir.url, console: Console(isTerminal: false))
        #expect(names(dir.url) == [unfinished.lastPathComponent, placed.lastPathComponent])
        #expect(Recovery.isFinished(placed))
    }

    @Test func theFolderIsMadeAndTheCheckLeavesNothingInIt() throws {
        let dir = try TemporaryDirectory()
        let folder = dir.url.appendingPathComponent("new/replays")
        #expect(try ReplaySaver.prepareFolder(folder, console: Console(isTerminal: false)), "made")
        #expect(names(folder).isEmpty, "the check leaves nothing behind")
        #expect(try !ReplaySaver.prepareFolder(folder, console: Console(isTerminal: false)), "there already")
    }

    @Test func aReadOnlyFolderIsRefusedAtOnceNamingReplayDir() throws {
        let disk = try SmallDisk(size: "1M")
        #expect(try Subprocess.run(["mount", "-o", "remount,ro", disk.url.path]).status == 0)
        #expect {
            _ = try ReplaySaver.prepareFolder(disk.url, console: Console(isTerminal: false))
        } throws: { error in
            let e = error as? ReelError
            return e?.message.contains("read-only") == true && e?.hint?.contains("--replay-dir") == true
        }
    }
}

/// Giving a finished file the first name that is free.
@Suite struct PlaceAtFirstFreeTests {
    @Test func takesTheFirstFreeNameAndReplacesNothing() throws {
        let dir = try TemporaryDirectory()
        let names = (1...3).map { dir.url.appendingPathComponent("n\($0).mp4") }
        try Data("one".utf8).write(to: names[0])
        let temporary = dir.url.appendingPathComponent(".n1.replay-1-1.mp4")
        try Data("new".utf8).write(to: temporary)
        #expect(try FilePlacement.placeAtFirstFree(temporary, candidates: names, what: "the file") == names[1])
        #expect(try String(contentsOf: names[0], encoding: .utf8) == "one")
        #expect(try String(contentsOf: names[1], encoding: .utf8) == "new")
        #expect(!FileManager.default.fileExists(atPath: temporary.path))
        try Data("newer".utf8).write(to: temporary)
        try Data("three".utf8).write(to: names[2])
        #expect(throws: ReelError.self) { try FilePlacement.placeAtFirstFree(temporary, candidates: Array(names.prefix(3)), what: "the file") }
        #expect(try String(contentsOf: temporary, encoding: .utf8) == "newer", "a file with nowhere to go stays where it is")
    }
}
