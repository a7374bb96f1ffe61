import Foundation
import Testing
import Reel
import ReelTestSupport

/// A camera recorder's takes feed sinks of the app's from their one encode (issue 28: it could
/// never stream nor keep a replay buffer): each take gets the sinks ``CameraRecorder/sinksForEachTake``
/// makes for it, which take the same video packets as its clips (nothing during a pause) from
/// one video encoder (a resume opens none), are begun and finished with it, and a replay buffer among them saves the end of its take. On a
/// stepped manual clock, exactly.
@Suite struct CameraRecorderSinkTests {
    /// Counts what a take gave it.
    final class TakeLog: PacketSink, @unchecked Sendable {
        let take: URL
        private let lock = NSLock()
        private var videoPackets = 0, keyframes = 0, begun = 0, finished = 0
        private var firstIsKeyframe: Bool?
        init(take: URL) { self.take = take }
        var counts: (video: Int, keyframes: Int, begun: Int, finished: Int, firstIsKeyframe: Bool?) {
            lock.withLock { (videoPackets, keyframes, begun, finished, firstIsKeyframe) }
        }
        var policy: SinkPolicy { .optional }
        func add(_ stream: EncodedStream) throws {}
        func begin() throws { lock.withLock { begun += 1 } }
        func write(_ packet: EncodedPacket) throws -> SinkFlow {
            guard packet.stream.kind == .video else { return .ok }
            lock.withLock {
                if firstIsKeyframe == nil { firstIsKeyframe = packet.isKeyframe }
                videoPackets += 1
                if packet.isKeyframe { keyframes += 1 }
            }
            return .ok
        }
        func finish() throws { lock.withLock { finished += 1 } }
    }

    /// The sinks made, take by take.
    final class Made: @unchecked Sendable {
        let lock = NSLock()
        var takes: [(log: TakeLog, replay: ReplayBuffer)] = []
    }

    @Test func eachTakeFeedsSinksOfItsOwnFromItsOneEncode() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock(mode: .stepped)
        let helper = CameraRecorderStopRecordingTests()
        let recorder = helper.recorder(dir, clock)
        let made = Made()
        recorder.sinksForEachTake = { take in
            let log = TakeLog(take: take)
            guard let replay = try? ReplayBuffer(duration: MediaTime(seconds: 0.5)) else { return [log] }
            made.lock.withLock { made.takes.append((log, replay)) }
            return [log, replay]
        }
        // The encoders the first take opens (its recorder's thread starts in this census).
        let census = EncoderCensus()
        try await EncoderCensus.$current.withValue(census) { try await recorder.start() }
        #expect(made.lock.withLock { made.takes.count } == 1, "the first take is made at the start")
        // Take one: two clips, a pause between them.
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 1))
        _ = try await helper.settled { recorder.recordedDuration }
        try recorder.pause()
        clock.advance(to: MediaTime(seconds: 1.5))
        try recorder.record()
        clock.advance(to: MediaTime(seconds: 2.5))
        _ = try await helper.settled { recorder.recordedDuration }
        let first = try #require(try await recorder.stopRecording())
        #expect(census.videoEncoders == 1, "two clips and their sinks from one video encode: \(census.videoEncoders)")
        // Take two, into another file.
        recorder.outputURL = dir.url.appendingPathComponent("two.mp4")
        try recorder.record()
        #expect(made.lock.withLock { made.takes.count } == 2, "the next take made its own")
        clock.advance(to: MediaTime(seconds: 3.5))
        _ = try await helper.settled { recorder.recordedDuration }
        let second = try #require(try await recorder.stopRecording())
        _ = try await helper.ticking(clock) { try await recorder.stop() }

        let takes = made.lock.withLock { made.takes }
        try #require(takes.count == 2)
        for ((log, replay), file) in zip(takes, [first.url, second.url]) {
            #expect(log.take.path == file.path)
            let frames = try helper.counters(file)
            let counts = log.counts
            #expect(counts.begun == 1 && counts.finished == 1, "begun and finished with its take: \(counts)")
            #expect(counts.video == frames.count, "the sink took the take's \(frames.count) frames: \(counts.video)")
            #expect(counts.firstIsKeyframe == true)
            // The replay buffer holds the end of its take: saved after the take, whole.
            let saved = try await replay.save(to: dir.url.appendingPathComponent("replay-\(file.lastPathComponent)"))
            let replayed = try helper.counters(saved.url)
            #expect(saved.videoFrames == replayed.count && replayed.count >= 15, "\(replayed.count) frames saved")
            #expect(replayed.last == frames.last, "the replay ends where the take ended: \(replayed.last ?? -1) of \(frames.last ?? -1)")
        }
        // Take one's pause is no part of what its sink took: about 60 frames of 2 s recorded in
        // 2.5 (75 with the pause).
        #expect((59...62).contains(takes[0].log.counts.video), "\(takes[0].log.counts)")
    }
}
