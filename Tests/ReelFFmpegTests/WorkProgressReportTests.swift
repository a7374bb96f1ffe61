import Foundation
import Synchronization
import Testing
import ReelCore
@testable import ReelFFmpeg
import ReelTestSupport

/// Merging and recovering report how far they have come: a first report at zero, reports that
/// never go back, and a last one that says the work is done, over the bytes of the inputs.
@Suite struct WorkProgressReportTests {
    final class Heard: Sendable {
        let reports = Mutex<[WorkProgress]>([])
        var all: [WorkProgress] { reports.withLock { $0 } }
        var handler: @Sendable (WorkProgress) -> Void { { p in self.reports.withLock { $0.append(p) } } }
    }

    static func size(_ url: URL) throws -> Int64 {
        (try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value ?? 0
    }

    func expectWhole(_ reports: [WorkProgress], stage: WorkProgress.Stage, total: Int64) {
        #expect(reports.count >= 2, "\(reports)")
        #expect(reports.first?.completedUnitCount == 0)
        #expect(reports.last?.isFinished == true)
        #expect(reports.allSatisfy { $0.stage == stage }, "\(reports.map(\.stage))")
        #expect(reports.allSatisfy { $0.totalUnitCount == total }, "\(reports.map(\.totalUnitCount)) of \(total)")
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.completedUnitCount <= $1.completedUnitCount }, "never back")
        #expect(reports.dropLast().allSatisfy { !$0.isFinished }, "finished only at the end")
    }

    @Test func aMergeByCopyingReportsTheClipsBytes() throws {
        let dir = try TemporaryDirectory()
        let maker = ClipMaker(folder: dir.url)
        let clips = try (0..<3).map { try maker.make($0, frames: 45) }
        let heard = Heard()
        _ = try Merger.merge(clips.map { MergeInput(url: $0) }, to: dir.url.appendingPathComponent("all.mp4"), progress: heard.handler)
        expectWhole(heard.all, stage: .merging, total: try clips.reduce(0) { $0 + (try Self.size($1)) })
    }

    @Test func aMergeThatEncodesAgainSaysSo() throws {
        let dir = try TemporaryDirectory()
        let maker = ClipMaker(folder: dir.url)
        let clips = [try maker.make(0, frames: 30), try maker.make(1, frames: 30, size: PixelSize(width: 160, height: 120))]
        let heard = Heard()
        let summary = try Merger.merge(clips.map { MergeInput(url: $0) }, to: dir.url.appendingPathComponent("all.mp4"),
                                       options: MergeOptions(allowsReencoding: true), progress: heard.handler)
        #expect(!summary.reencodedClips.isEmpty)
        expectWhole(heard.all, stage: .reencoding, total: try clips.reduce(0) { $0 + (try Self.size($1)) })
    }

    @Test func aFailedMergeNeverSaysItIsDone() throws {
        let dir = try TemporaryDirectory()
        let maker = ClipMaker(folder: dir.url)
        let clips = [try maker.make(0, frames: 30), try maker.make(1, frames: 30, size: PixelSize(width: 160, height: 120))]
        let heard = Heard()
        #expect(throws: ReelError.self) {
            try Merger.merge(clips.map { MergeInput(url: $0) }, to: dir.url.appendingPathComponent("all.mp4"), progress: heard.handler)
        }
        #expect(heard.all.allSatisfy { !$0.isFinished })
    }

    @Test(arguments: [false, true])
    func aRecoveryReportsTheRecordingsBytes(_ intoACopy: Bool) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.mp4")
        try RecoveryTests.cutOff(url, frames: 90)
        let total = try Self.size(url)
        let heard = Heard()
        let summary = try Recovery.recover(url, to: intoACopy ? dir.url.appendingPathComponent("copy.mp4") : nil, progress: heard.handler)
        #expect(summary.videoFrames > 0)
        expectWhole(heard.all, stage: .recovering, total: total)
    }
}
