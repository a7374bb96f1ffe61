import Foundation
import Testing
@testable import Reel
import ReelTestSupport

/// A clips folder someone deletes or moves while the recording goes on: the recording follows a
/// moved folder, makes a deleted one again and goes on there, keeps the clip being recorded, and
/// says which finished clips are lost (the file is then not whole).
@Suite struct ClipsFolderChangeTests {
    /// A clip recorder of the test pattern on a stepped clock: clip 1 is [0, 1) s, a pause until
    /// 2 s, clip 2 from there.
    struct Rig {
        let dir: TemporaryDirectory
        let url: URL
        let clock = ManualClock(mode: .stepped)
        let session: CaptureSession
        let recorder: Recorder
        var events: AsyncStream<RecordingEvent>.Iterator

        init(name: String) throws {
            dir = try TemporaryDirectory()
            url = dir.url.appendingPathComponent("\(name).mp4")
            session = CaptureSession(clock: clock)
            try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
            var settings = Recorder.Settings(pauseMode: .clips)
            settings.video.preset = "ultrafast"
            recorder = Recorder(url: url, settings: settings)
            recorder.pause(at: MediaTime(seconds: 1))
            recorder.record(at: MediaTime(seconds: 2))
            try session.addOutput(recorder)
            events = recorder.events.makeAsyncIterator()
        }

        var folder: URL { dir.url.appendingPathComponent("\(url.deletingPathExtension().lastPathComponent).clips", isDirectory: true) }

        /// Advances the clock to `seconds` and waits until the recorder has taken it in (a
        /// progress report at `recorded` or later) or `until` matched an event, collecting events.
        mutating func run(to seconds: Double, recorded: Double, seen: inout [RecordingEvent]) async {
            clock.advance(to: MediaTime(seconds: seconds))
            while let event = await events.next() {
                seen.append(event)
                if case .progress(let p) = event, p.duration >= MediaTime(seconds: recorded) { return }
            }
        }

        /// Waits until clip 1 is finished (its file is finished on a thread of its own, maybe
        /// after the progress past it), collecting events.
        mutating func waitForTheFirstClip(seen: inout [RecordingEvent]) async {
            func finished(_ event: RecordingEvent) -> Bool { if case .clipFinished = event { true } else { false } }
            guard !seen.contains(where: finished) else { return }
            while let event = await events.next() {
                seen.append(event)
                if finished(event) { return }
            }
        }

        mutating func finish(seen: inout [RecordingEvent]) async throws -> RecordingSummary {
            await session.stop()
            while let event = await events.next() { seen.append(event) }
            return try await recorder.result()
        }
    }

    /// The test pattern's counters of the file's frames, in order (-1 for one unreadable).
    static func counters(_ url: URL) throws -> [Int64] {
        try MediaProbe.decodeLuma(url, width: 160, height: 120).map { $0.counter ?? -1 }
    }

    static func folderChanges(_ events: [RecordingEvent]) -> [ClipsFolderChange] {
        events.compactMap { if case .clipsFolderChanged(let change) = $0 { change } else { nil } }
    }

    @Test func aFolderDeletedWhileAClipIsRecordedIsMadeAgainAndTheLostClipIsSaid() async throws {
        var rig = try Rig(name: "deleted")
        try await rig.session.start()
        var seen: [RecordingEvent] = []
        await rig.run(to: 2.6, recorded: 1.5, seen: &seen)      // clip 2 half a second in
        await rig.waitForTheFirstClip(seen: &seen)
        let clip1 = rig.folder.appendingPathComponent("clip-001.mp4")
        #expect(FileManager.default.fileExists(atPath: clip1.path))
        try FileManager.default.removeItem(at: rig.folder)      // rm -rf while clip 2 is written
        await rig.run(to: 4, recorded: 2.9, seen: &seen)
        let summary = try await rig.finish(seen: &seen)

        #expect(Self.folderChanges(seen) == [.remade(rig.folder, lostClips: [clip1])])
        #expect(summary.lostClips == [clip1])
        #expect(!summary.isWhole, "a lost clip makes the recording incomplete")
        // The file holds clip 2 whole: its frames, read back, are the test pattern's counters
        // from 2 s (frame 60) on, none missing.
        let counters = try Self.counters(rig.url)
        #expect(counters.count == Int(summary.frames))
        #expect(counters.first == 60)
        #expect(counters == Array(counters.first!..<(counters.first! + Int64(counters.count))))
        #expect(summary.frames >= 25, "clip 2 ran about a second: \(summary.frames) frames")
        #expect(!FileManager.default.fileExists(atPath: rig.folder.path), "the folder made again went once merged")
    }

    @Test func aFolderDeletedDuringAPauseIsMadeAgainAtTheResume() async throws {
        var rig = try Rig(name: "paused")
        try await rig.session.start()
        var seen: [RecordingEvent] = []
        rig.clock.advance(to: MediaTime(seconds: 1.5))          // paused since 1 s
        while let event = await rig.events.next() {
            seen.append(event)
            if case .clipFinished = event { break }
        }
        let clip1 = rig.folder.appendingPathComponent("clip-001.mp4")
        try FileManager.default.removeItem(at: rig.folder)
        await rig.run(to: 3.5, recorded: 2.4, seen: &seen)      // resumed at 2 s
        let summary = try await rig.finish(seen: &seen)

        #expect(Self.folderChanges(seen) == [.remade(rig.folder, lostClips: [clip1])])
        #expect(summary.lostClips == [clip1])
        #expect(!summary.isWhole)
        let counters = try Self.counters(rig.url)
        #expect(counters.first == 60, "the file begins where the resume did")
        #expect(counters.count == Int(summary.frames))
    }

    @Test func aFolderMovedWhileRecordedIsFollowedAndNothingIsLost() async throws {
        var rig = try Rig(name: "moved")
        try await rig.session.start()
        var seen: [RecordingEvent] = []
        await rig.run(to: 2.6, recorded: 1.5, seen: &seen)
        let elsewhere = rig.dir.url.appendingPathComponent("renamed.clips", isDirectory: true)
        try FileManager.default.moveItem(at: rig.folder, to: elsewhere)
        await rig.run(to: 4, recorded: 2.9, seen: &seen)
        let summary = try await rig.finish(seen: &seen)

        #expect(Self.folderChanges(seen) == [.moved(from: rig.folder, to: elsewhere)])
        #expect(summary.lostClips.isEmpty)
        #expect(summary.isWhole)
        let counters = try Self.counters(rig.url)
        #expect(counters.count == Int(summary.frames))
        #expect(counters.prefix(30) == ArraySlice(Array(0..<30)), "clip 1, from the moved folder")
        #expect(counters.dropFirst(30).first == 60, "then clip 2")
        #expect(!FileManager.default.fileExists(atPath: elsewhere.path), "merged: the clips went, from where they were")
        #expect(!FileManager.default.fileExists(atPath: rig.folder.path))
    }

    @Test func aClipFileDeletedBeforeTheStopIsLeftOutAndSaid() async throws {
        var rig = try Rig(name: "oneclip")
        try await rig.session.start()
        var seen: [RecordingEvent] = []
        await rig.run(to: 2.6, recorded: 1.5, seen: &seen)
        await rig.waitForTheFirstClip(seen: &seen)
        let clip1 = rig.folder.appendingPathComponent("clip-001.mp4")
        try FileManager.default.removeItem(at: clip1)           // the file, not the folder
        await rig.run(to: 3.5, recorded: 2.4, seen: &seen)
        let summary = try await rig.finish(seen: &seen)

        #expect(Self.folderChanges(seen).isEmpty)
        #expect(summary.lostClips == [clip1])
        #expect(!summary.isWhole)
        #expect(try Self.counters(rig.url).first == 60)
    }
}
