import Foundation
import Testing
@testable import Reel
import ReelTestSupport

/// The recording file's checks before a start and its tidying of a killed recording's
/// leftovers, as any library user gets them (not through `reel`): no encoder, no clock.
@Suite struct RecordingFileTests {
    func refusal(_ body: () throws -> Void) -> ReelError? {
        do { try body() } catch let error as ReelError { return error } catch { return nil }
        return nil
    }

    @Test func preflightRefusesWhatWouldFailOrLoseAFile() throws {
        let dir = try TemporaryDirectory()
        let missing = refusal { try RecordingFile(url: dir.url.appendingPathComponent("none/x.mp4")).preflight(overwrite: false) }
        #expect(missing?.code == .ioFailure && missing?.message.contains("does not exist") == true, "\(String(describing: missing))")

        let url = dir.url.appendingPathComponent("x.mp4")
        try Data("mine".utf8).write(to: url)
        let exists = refusal { try RecordingFile(url: url).preflight(overwrite: false) }
        #expect(exists?.code == .fileExists && exists?.hint == LibraryHint.allowOverwriting, "\(String(describing: exists))")
        #expect(refusal { try RecordingFile(url: url).preflight(overwrite: true) } == nil)

        let folder = dir.url.appendingPathComponent("f.mp4")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let isFolder = refusal { try RecordingFile(url: folder).preflight(overwrite: true) }
        #expect(isFolder?.message.hasSuffix("is a folder") == true, "\(String(describing: isFolder))")

        let input = dir.url.appendingPathComponent("input.mp4")
        try Data("a film".utf8).write(to: input)
        let link = dir.url.appendingPathComponent("link.mp4")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: input)
        let reads = refusal { try RecordingFile(url: link).preflight(overwrite: true, inputs: [input]) }
        #expect(reads?.code == .invalidConfiguration, "\(String(describing: reads))")
        #expect(try Data(contentsOf: input) == Data("a film".utf8))
    }

    /// A file another recording is writing (it holds the recording lock) is refused before
    /// anything is recorded, with `overwrite` too: found only when the new file took the name,
    /// a second of recording in, which was thrown away (issue 26, F4).
    @Test func preflightRefusesAFileAnotherRecordingIsWriting() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("busy.mp4")
        try Data("being recorded".utf8).write(to: url)
        let fd = open(url.path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        try #require(flock(fd, LOCK_EX | LOCK_NB) == 0)
        for overwrite in [false, true] {
            let refused = refusal { try RecordingFile(url: url).preflight(overwrite: overwrite) }
            #expect(refused?.code == .busy && refused?.message.contains("is being recorded right now") == true, "\(String(describing: refused))")
        }
        flock(fd, LOCK_UN)
        #expect(refusal { try RecordingFile(url: url).preflight(overwrite: true) } == nil, "free once the other recording is done")
    }

    /// The clips of an earlier recording of the name that was never merged: a new recording
    /// of that name would leave them without their file.
    @Test func preflightRefusesTheNameOfAnUnmergedClipRecording() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("take.mp4")
        let folder = RecordingSession.defaultFolder(for: url)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let manifest = ClipsManifest(target: url.path, state: .stopped, keepsClips: false,
                                     clips: [.init(file: "clip-001.mp4", muted: false, finished: true, frames: 30, duration: 1)])
        try manifest.write(into: folder)
        try Data(count: 4096).write(to: folder.appendingPathComponent("clip-001.mp4"))
        let refused = refusal { try RecordingFile(url: url).preflight(overwrite: true) }
        #expect(refused?.code == .fileExists && refused?.message.contains("never merged") == true, "\(String(describing: refused))")
        // Elsewhere for the clips: free.
        #expect(refusal { try RecordingFile(url: url).preflight(overwrite: true, clipsFolder: dir.url.appendingPathComponent("other")) } == nil)
    }

    @Test func preflightRefusesANearlyFullDisk() throws {
        let disk = try SmallDisk(size: "2M")
        let refused = refusal {
            try RecordingFile(url: disk.url.appendingPathComponent("x.mp4")).preflight(overwrite: false, minimumFreeSpace: 100_000_000)
        }
        #expect(refused?.code == .insufficientStorage && refused?.message.contains("MB free") == true, "\(String(describing: refused))")
    }

    /// A recording killed before its first part reached the disk leaves its header alone: the
    /// refusal says it holds nothing recorded (nothing is lost by replacing it), instead of a
    /// bare "already exists" that sends the user looking for what it holds.
    @Test func aFileHoldingOnlyAKilledRecordingsHeaderIsSaidToHoldNothing() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("killed.mp4")
        let writer = try AssetWriter(configuration: AssetWriter.Configuration(
            url: url, container: .mp4,
            video: AssetWriter.VideoTrack(settings: VideoSettings(codec: .h264), inputFormat: .yuv420p, inputSize: PixelSize(width: 160, height: 120)),
            audio: []))
        writer.cancelWriting()          // as a kill leaves it: the header and the room for the index
        #expect((FileIdentity.size(of: url) ?? 0) > 0)
        var refused: ReelError?
        do { try RecordingFile(url: url).preflight(overwrite: false) } catch let error as ReelError { refused = error }
        #expect(refused?.code == .fileExists && refused?.message.contains("cut off before any part of it reached the disk (it holds nothing recorded)") == true,
                "\(String(describing: refused))")
        #expect(refused?.hint?.hasPrefix("nothing is lost by replacing it") == true)
        #expect(FileManager.default.fileExists(atPath: url.path), "refused, not touched")
        try RecordingFile(url: url).preflight(overwrite: true)
    }

    /// A killed recording's hidden file that holds nothing goes; one of a process that still
    /// runs, and a file that is not a recording, stay.
    @Test func tidyingRemovesOnlyAKilledRecordingsEmptyHiddenFile() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("x.mp4")
        // A process ID that runs no process (beyond the kernel's limit).
        let dead = dir.url.appendingPathComponent(".x.new-4194305-7.mp4")
        let live = dir.url.appendingPathComponent(".x.new-\(getpid())-8.mp4")
        let notOurs = dir.url.appendingPathComponent(".x.new-4194305-9.mp4")
        for file in [dead, live] { _ = FileManager.default.createFile(atPath: file.path, contents: Data()) }
        try Data("a note, not a film".utf8).write(to: notOurs)
        let found = RecordingFile(url: url).tidyLeftovers()
        #expect(found == [.removed(dead)], "\(found)")
        #expect(!FileManager.default.fileExists(atPath: dead.path))
        #expect(FileManager.default.fileExists(atPath: live.path) && FileManager.default.fileExists(atPath: notOurs.path))
    }

    @Test func theHiddenNameTellsItsMaker() {
        let url = URL(fileURLWithPath: "/videos/talk.mp4")
        #expect(FilePlacement.maker(of: URL(fileURLWithPath: "/videos/.talk.new-123-456.mp4"), beside: url, purpose: "new") == 123)
        #expect(FilePlacement.maker(of: URL(fileURLWithPath: "/elsewhere/.talk.new-123-456.mp4"), beside: url, purpose: "new") == nil)
        #expect(FilePlacement.maker(of: URL(fileURLWithPath: "/videos/.talk.finalising-123-456.mp4"), beside: url, purpose: "new") == nil)
        #expect(FilePlacement.maker(of: URL(fileURLWithPath: "/videos/.talk.new-x-456.mp4"), beside: url, purpose: "new") == nil)
    }

    /// A recorder that was never started leaves nothing, and says the file at its name is as it was.
    @Test func anAbortBeforeTheStartLeavesTheFileAtTheName() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("x.mp4")
        try Data("mine".utf8).write(to: url)
        let report = Recorder(url: url).abort()
        #expect(report.outcome == .nothingRecorded && report.unchangedFile == url && report.recoveryTarget == nil)
        #expect(Recorder(sinks: []).abort().outcome == .noFile)
        #expect(try Data(contentsOf: url) == Data("mine".utf8))
    }

    @Test func libraryHintsOfTheFileNameNoFlag() {
        for hint in [LibraryHint.createFolderOrChooseAnother, LibraryHint.chooseAnotherFolder, LibraryHint.overwritingDiscardsIt,
                     LibraryHint.giveAFileName] {
            #expect(!hint.contains("--") && !hint.contains("-o"), "\(hint)")
        }
    }
}
