import Foundation
import Testing
import ReelCore
@testable import ReelFFmpeg
import ReelTestSupport

/// The sink policy table, on one encoder and sinks that answer as told: what a required or an
/// optional sink that fails, is full or goes does to the recording and to the other sinks, at
/// a write, a pause and the finish. Packet N is the Nth frame (ultrafast: no B-frames), though
/// the encoder may hold a few back until the finish.
@Suite struct SinkPolicyTests {
    /// A sink that takes packets until its `answer` says otherwise.
    final class Scripted: PacketSink, CustomStringConvertible, @unchecked Sendable {
        enum Answer { case take, fail, full, gone }
        let declared: SinkPolicy
        /// What the write of packet N (from zero) answers.
        var answer: (Int) -> Answer
        var failsAtFinish = false
        var failsAtFlush = false
        var taken = 0
        var asked = 0
        var finished = 0
        let description: String

        init(_ name: String, policy: SinkPolicy = .required, answer: @escaping (Int) -> Answer = { _ in .take }) {
            description = name
            declared = policy
            self.answer = answer
        }

        var policy: SinkPolicy { declared }
        func add(_ stream: EncodedStream) throws {}
        func write(_ packet: EncodedPacket) throws -> SinkFlow {
            defer { asked += 1 }
            switch answer(asked) {
            case .take: taken += 1; return .ok
            case .fail: throw ReelError(.insufficientStorage, "\(description): the disk is full")
            case .full: return .full
            case .gone: return .gone
            }
        }
        func flush() throws {
            if failsAtFlush { throw ReelError(.ioFailure, "\(description) cannot flush") }
        }
        func finish() throws {
            finished += 1
            if failsAtFinish { throw ReelError(.ioFailure, "\(description) cannot finish") }
        }
    }

    /// A plain sink that says nothing of its policy.
    final class Plain: PacketSink {
        func add(_ stream: EncodedStream) throws {}
        func write(_ packet: EncodedPacket) throws -> SinkFlow { .ok }
        func finish() throws {}
    }

    /// An ultrafast 320x240 encoder with `sinks`, each added with the policy it declares;
    /// the dropped sinks are recorded into `dropped` with what they threw.
    func encoder(_ sinks: [Scripted], dropped: Dropped) throws -> StreamEncoder {
        var settings = VideoSettings(codec: .h264, frameRate: FrameRate(30))
        settings.preset = "ultrafast"
        let encoder = try StreamEncoder(video: AssetWriter.VideoTrack(settings: settings, inputFormat: .yuv420p,
                                                                      inputSize: PixelSize(width: 320, height: 240)), audio: [])
        for sink in sinks { try encoder.addSink(sink, policy: sink.policy) }
        encoder.onSinkDropped = { sink, error in dropped.list.append(((sink as? Scripted)?.description ?? "?", error as? ReelError)) }
        return encoder
    }

    final class Dropped: @unchecked Sendable {
        var list: [(name: String, error: ReelError?)] = []
    }

    @Test func whatASinkIsUnlessItSaysOtherwise() throws {
        #expect(Plain().policy == .required, "an application's sink is one the recording depends on")
        #expect((try? ReplayBuffer(duration: MediaTime(seconds: 5)))?.policy == .optional)
        #expect((try? LiveStream(url: URL(string: "rtmp://127.0.0.1/live/key")!))?.policy == .optional)
    }

    /// Feeds frames `frames` and finishes; what was thrown, if anything.
    func run(_ encoder: StreamEncoder, frames: Range<Int64>) -> (any Error)? {
        do {
            try feedTestPattern(encoder, frames: frames)
            try encoder.finish()
            return nil
        } catch {
            return error
        }
    }

    @Test func aRequiredSinkThatFailsFailsTheRecordingOnceEveryOtherSinkHasThePacket() throws {
        let file = Scripted("file") { $0 == 5 ? .fail : .take }
        let replay = Scripted("replay", policy: .optional)
        let dropped = Dropped()
        let encoder = try encoder([file, replay], dropped: dropped)
        let thrown = run(encoder, frames: 0..<20)
        #expect((thrown as? ReelError)?.message.contains("the disk is full") == true, "\(String(describing: thrown))")
        #expect(file.taken == 5 && replay.taken == file.asked, "the replay buffer took the packet the file could not")
        #expect(dropped.list.isEmpty)
    }

    @Test func aRequiredSinkThatIsFullIsTheRecordingsSizeAndIsStillFinished() throws {
        let file = Scripted("file") { $0 >= 10 ? .full : .take }
        let other = Scripted("other", policy: .optional)
        let dropped = Dropped()
        let encoder = try encoder([file, other], dropped: dropped)
        #expect(run(encoder, frames: 0..<20) == nil)
        #expect(encoder.hasFullSink)
        #expect(file.taken == 10 && file.asked == 11, "asked once more, then never again")
        #expect(other.taken == 20)
        #expect(file.finished == 1 && other.finished == 1)
        #expect(dropped.list.isEmpty)
    }

    @Test func aRequiredSinkThatGoesFailsTheRecording() throws {
        let file = Scripted("file") { $0 == 3 ? .gone : .take }
        let encoder = try encoder([file], dropped: Dropped())
        let thrown = run(encoder, frames: 0..<10)
        #expect((thrown as? ReelError)?.message.contains("stopped taking packets") == true, "\(String(describing: thrown))")
        #expect(!encoder.hasFullSink)
    }

    @Test(arguments: [Scripted.Answer.fail, .full, .gone])
    func anOptionalSinkThatEndsIsDroppedSayingWhyAndTheRecordingGoesOn(_ end: Scripted.Answer) throws {
        let file = Scripted("file")
        let upload = Scripted("upload", policy: .optional) { $0 == 4 ? end : .take }
        let dropped = Dropped()
        let encoder = try encoder([file, upload], dropped: dropped)
        #expect(run(encoder, frames: 0..<12) == nil)
        #expect(file.taken == 12 && file.finished == 1)
        #expect(upload.taken == 4 && upload.asked == 5 && upload.finished == 1, "finished once, when dropped")
        #expect(dropped.list.map(\.name) == ["upload"])
        #expect((dropped.list.first?.error != nil) == (end == .fail), "the error when it threw, nil otherwise")
        #expect(!encoder.hasFullSink, "an optional sink's being full is not the recording's size")
    }

    @Test func atTheFinishARequiredSinksFailureIsThrownAfterEverySinkFinishedAndAnOptionalOnesIsSaid() throws {
        let file = Scripted("file"), upload = Scripted("upload", policy: .optional), other = Scripted("other")
        file.failsAtFinish = true
        upload.failsAtFinish = true
        let dropped = Dropped()
        let encoder = try encoder([file, upload, other], dropped: dropped)
        #expect(run(encoder, frames: 0..<3) is ReelError)
        #expect([file, upload, other].allSatisfy { $0.finished == 1 })
        #expect(dropped.list.map(\.name) == ["upload"] && dropped.list.first?.error != nil)
    }

    @Test func aPauseAnOptionalSinkCannotFlushGoesOnAndARequiredOnesFails() throws {
        let file = Scripted("file"), upload = Scripted("upload", policy: .optional)
        upload.failsAtFlush = true
        let encoder = try encoder([file, upload], dropped: Dropped())
        try feedTestPattern(encoder, frames: 0..<3)
        try encoder.pause()
        file.failsAtFlush = true
        try feedTestPattern(encoder, frames: 10..<12)
        #expect(throws: ReelError.self) { try encoder.pause() }
    }
}
