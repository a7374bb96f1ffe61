import Foundation
import Synchronization
import Testing
@testable import ReelCLI
@testable import Reel
import ReelTestSupport

/// Lost frames said with why (s2 F3): the `finished` event counts them by reason, and the line
/// said while recording names the reason and what to pass.
@Suite struct FrameDropWordsTests {
    @Test func theReasonReachesTheEvents() throws {
        var drops = FrameDrops()
        drops.add(58, .encoderBehind)
        drops.add(2, .captureLate)
        var summary = RecordingSummary(url: URL(fileURLWithPath: "/tmp/x.mp4"), duration: MediaTime(seconds: 5), frames: 90,
                                       droppedFrames: 60, bytes: 1000, videoSize: nil, video: nil, audioTracks: [], audio: nil,
                                       container: .mp4, reachedLimit: true, clipCount: 1, ending: .maxDuration)
        summary.frameDrops = drops
        let renderer = ProgressRenderer(console: Console(isTerminal: false), json: false)
        let lines = Mutex<[String]>([])
        renderer.eventListener = { line in lines.withLock { $0.append(line) } }
        let notice = FrameDropNotice(reason: .encoderBehind, count: 12, at: MediaTime(seconds: 1.5), total: drops)
        renderer.render(.framesDropped(notice))
        renderer.render(.finished(summary))
        let events = lines.withLock { $0 }.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let dropped = try #require(events.first { $0["event"] as? String == "framesDropped" })
        #expect(dropped["reason"] as? String == "encoderBehind" && dropped["count"] as? Int == 12, "\(dropped)")
        #expect((dropped["hint"] as? String ?? "").contains("--preset"), "\(dropped)")
        let finished = try #require(events.first { $0["event"] as? String == "finished" })
        let by = try #require(finished["droppedBy"] as? [String: Any], "\(finished)")
        #expect(by["encoderBehind"] as? Int == 58 && by["captureLate"] as? Int == 2, "\(by)")
        // Said on a terminal with the flags to pass; the library's words name none.
        #expect(FrameDropWords.line(notice).contains("the encoder could not keep up; try a faster --preset"), "\(FrameDropWords.line(notice))")
        #expect(!(FrameDropReason.encoderBehind.hint ?? "").contains("--"))
        #expect(FrameDropWords.summaryLines(drops).count == 2)
    }
}

/// A recording saved elsewhere because its file was deleted and its folder took no new file
/// says which: a folder deleted (`folderDeleted`), or one still there but unwritable (a
/// read-only remount: `folderUnwritable`). It said `folderDeleted` of a folder that was
/// there (s6 N9).
@Suite struct SavedElsewhereWordsTests {
    func finished(savedFrom file: URL) throws -> (event: [String: Any], note: String?) {
        var summary = RecordingSummary(url: URL(fileURLWithPath: "/home/x.mp4"), duration: MediaTime(seconds: 1), frames: 30,
                                       droppedFrames: 0, bytes: 1000, videoSize: nil, video: nil, audioTracks: [], audio: nil,
                                       container: .mp4, reachedLimit: false, clipCount: 1, ending: .requested)
        summary.relocation = .savedElsewhere(from: file)
        let renderer = ProgressRenderer(console: Console(isTerminal: false), json: false)
        let lines = Mutex<[String]>([])
        renderer.eventListener = { line in lines.withLock { $0.append(line) } }
        renderer.render(.finished(summary))
        let events = lines.withLock { $0 }.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        return (try #require(events.first { $0["event"] as? String == "finished" }), ProgressRenderer.note(summary.relocation))
    }

    @Test func aFolderStillThereIsNotSaidToBeDeleted() throws {
        let dir = try TemporaryDirectory()
        let there = try finished(savedFrom: dir.url.appendingPathComponent("a.mp4"))
        #expect(there.event["folderUnwritable"] as? String == dir.url.path && there.event["folderDeleted"] == nil, "\(there.event)")
        #expect(there.note?.contains("its folder takes no new file") == true, "\(there.note ?? "")")
        let gone = try finished(savedFrom: dir.url.appendingPathComponent("gone/a.mp4"))
        #expect(gone.event["folderDeleted"] as? String == dir.url.appendingPathComponent("gone").path, "\(gone.event)")
        #expect(gone.note?.contains("was deleted while it was recorded: the recording was saved here") == true, "\(gone.note ?? "")")
    }
}
