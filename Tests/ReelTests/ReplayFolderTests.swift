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

    /// A recording that stops at 1 s recorded of a small test pattern and a tone into `url`.
    func record(to url: URL, settings: Recorder.Settings, afterStart: @Sendable () throws -> Void = {}) async throws -> Result<RecordingSummary, any Error> {
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        try session.addInput(ToneSource())
        var settings = settings
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: url, settings: settings)
        recorder.maxRecordedDuration = MediaTime(seconds: 1)
        try session.addOutput(recorder)
        try await session.start()
        try afterStart()
        let result: Result<RecordingSummary, any Error>
        do { result = .success(try await recorder.result()) } catch { result = .failure(error) }
        await session.stop()
        return result
    }

    /// A recorder records into a dated name this process reserved without being told it may
    /// overwrite: the empty file is the recording's own.
    @Test func aReservedNameIsRecordedIntoWithoutOverwriting() async throws {
        let dir = try TemporaryDirectory()
        let url = try Recorder.reserveDatedFile(in: dir.url, container: .mp4)
        let made = try await record(to: url, settings: Recorder.Settings()).get()
        #expect(Int(made.frames) > 0)
        #expect(try MediaProbe.frameTimes(url).count == Int(made.frames))
        // Recorded into: giving the name back keeps it.
        #expect(!Recorder.releaseReservation(url))
        #expect(FileManager.default.fileExists(atPath: url.path))
    }

    /// In clip mode the clips folder holds the name once the recording starts, and the reserved
    /// empty file goes then (a crash leaves no empty file beside the clips). A file that someone
    /// puts at the name meanwhile is never replaced by the merge at the stop: it is refused and
    /// the clips are kept.
    @Test func aClipRecordingsMergeNeverReplacesAFileThatAppearedAtItsName() async throws {
        let dir = try TemporaryDirectory()
        let url = try Recorder.reserveDatedFile(in: dir.url, container: .mp4)
        let mine = Data("someone else's file".utf8)
        let result = try await record(to: url, settings: Recorder.Settings(pauseMode: .clips)) {
            #expect(!FileManager.default.fileExists(atPath: url.path), "the reservation was given back once the clips folder held the name")
            try mine.write(to: url)
        }
        #expect(throws: ReelError.self) { try result.get() }
        #expect(try Data(contentsOf: url) == mine)
        let clips = RecordingSession.defaultFolder(for: url)
        #expect(try FileManager.default.contentsOfDirectory(atPath: clips.path).contains { $0.hasSuffix(".mp4") })
    }

    /// Only the empty file the reservation made is given back: an empty file put at the name in
    /// its place is someone else's.
    @Test func givingANameBackRemovesOnlyTheFileItMade() throws {
        let dir = try TemporaryDirectory()
        let url = try Recorder.reserveDatedFile(in: dir.url, container: .mp4)
        try FileManager.default.removeItem(at: url)
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        #expect(!Recorder.releaseReservation(url))
        #expect(FileManager.default.fileExists(atPath: url.path))
        // Given back twice (or never reserved): nothing happens.
        #expect(!Recorder.releaseReservation(url))
        #expect(!Recorder.releaseReservation(dir.url.appendingPathComponent("other.mp4")))
    }
}
