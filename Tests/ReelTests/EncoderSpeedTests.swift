import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// Adapting the encoder's speed: a simulated slow encoder (``SimulatedSlowEncoder``, whose cost
/// per frame depends on the preset in use) on a manual clock makes the recorder step to faster
/// presets and back, through the real libx264 encoders and files; no wall-clock timing decides
/// a result.
@Suite struct EncoderSpeedTests {
    let size = PixelSize(width: 320, height: 240)
    static let frame = MediaTime(value: 1, timescale: 30)
    /// Over a frame's 33 ms at veryfast and superfast, under it at ultrafast.
    static let costs: [String: MediaTime] = ["veryfast": MediaTime(value: 50, timescale: 1000),
                                             "superfast": MediaTime(value: 40, timescale: 1000),
                                             "ultrafast": MediaTime(value: 20, timescale: 1000)]

    /// A sink that keeps what each video packet says: times, keyframe flag, its stream and the
    /// x264 `subme` of any x264 SEI in it (2 veryfast, 1 superfast, 0 ultrafast).
    final class PacketLog: PacketSink, @unchecked Sendable {
        struct Entry { var pts: Int64; var dts: Int64; var keyframe: Bool; var stream: ObjectIdentifier; var subme: Int? }
        private let lock = NSLock()
        private var kept: [Entry] = []
        private(set) var streamsAdded = 0
        var entries: [Entry] { lock.withLock { kept } }

        func add(_ stream: EncodedStream) throws { if stream.kind == .video { lock.withLock { streamsAdded += 1 } } }
        func write(_ packet: EncodedPacket) throws -> SinkFlow {
            guard packet.stream.kind == .video else { return .ok }
            let subme = packet.withUnsafeBytes { Self.subme(in: Array($0)) }
            let entry = Entry(pts: Int64((packet.presentationTime.seconds * 30).rounded()),
                              dts: Int64((packet.decodeTime.seconds * 30).rounded()), keyframe: packet.isKeyframe,
                              stream: ObjectIdentifier(packet.stream), subme: subme)
            lock.withLock { kept.append(entry) }
            return .ok
        }
        func finish() throws {}

        static func subme(in bytes: [UInt8]) -> Int? {
            let marker = Array(" subme=".utf8)
            guard bytes.count > marker.count + 1, String(decoding: bytes.prefix(200), as: UTF8.self).contains("x264") else { return nil }
            for i in 0..<(bytes.count - marker.count - 1) where bytes[i] == marker[0] {
                if (0..<marker.count).allSatisfy({ bytes[i + $0] == marker[$0] }) {
                    return Int(bytes[i + marker.count]) - 0x30
                }
            }
            return nil
        }
    }

    struct Outcome {
        var url: URL
        var summary: RecordingSummary
        var events: [EncoderSpeedChange]
        var log: PacketLog
        var replay: URL
    }

    func record(seconds: Int64, adapts: Bool = true, codec: VideoCodec = .h264, preset: String = "veryfast",
                costs: [String: MediaTime] = Self.costs) async throws -> Outcome {
        let dir = try TemporaryDirectory()
        dir.keep()
        let url = dir.url.appendingPathComponent("adapt.mp4")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: size, frameRate: FrameRate(30)))
        try session.addInput(ToneSource())
        var settings = Recorder.Settings()
        settings.video.codec = codec
        settings.video.preset = preset
        settings.video.frameRate = FrameRate(30)
        settings.adaptsEncoderSpeed = adapts
        settings.maxRecordedDuration = MediaTime(value: seconds, timescale: 1)
        let log = PacketLog()
        let replay = try ReplayBuffer(duration: MediaTime(value: seconds, timescale: 1))
        let recorder = Recorder(url: url, settings: settings, replayBuffer: replay, sinks: [log])
        recorder.backlogGauge = SimulatedSlowEncoder(frameDuration: Self.frame, costs: costs)
        try session.addOutput(recorder)
        let collected = Task {
            var changes: [EncoderSpeedChange] = []
            for await event in recorder.events { if case .encoderSpeedChanged(let c) = event { changes.append(c) } }
            return changes
        }
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        let replayURL = dir.url.appendingPathComponent("replay.mp4")
        _ = try await replay.save(to: replayURL)
        return Outcome(url: url, summary: summary, events: await collected.value, log: log, replay: replayURL)
    }

    /// Video packets' decoding times, keyframe flags and the number of video streams, by ffprobe.
    func probePackets(_ url: URL) throws -> (dts: [Double], keyframes: [Bool], videoStreams: Int) {
        let streams = try Subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "stream=index",
                                          "-of", "csv=p=0", url.path])
        let packets = try Subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=dts_time,flags",
                                          "-of", "csv=p=0", url.path])
        #expect(packets.status == 0)
        var dts: [Double] = []
        var keys: [Bool] = []
        for line in packets.output.split(separator: "\n") {
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let t = Double(fields[0]) else { continue }
            dts.append(t)
            keys.append(fields[1].hasPrefix("K"))
        }
        return (dts, keys, streams.output.split(separator: "\n").count)
    }

    /// What ffmpeg says while decoding every video frame (empty when clean).
    func decodeErrors(_ url: URL) throws -> String {
        let result = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-map", "0:v:0", "-f", "null", "-"])
        return result.status == 0 ? result.stderr : "exit \(result.status): \(result.stderr)"
    }

    @Test func stepsDownUnderASlowEncoderAndBackUpLosingNoFrame() async throws {
        let outcome = try await record(seconds: 16)
        let steps = outcome.events.map { "\($0.reason.rawValue) \($0.fromPreset)→\($0.toPreset)" }
        // veryfast and superfast are too slow for 30 fps, ultrafast keeps up; after 10 s calm it
        // steps back, superfast falls behind again, and it steps down once more.
        #expect(steps == ["overloaded veryfast→superfast", "overloaded superfast→ultrafast",
                          "recovered ultrafast→superfast", "overloaded superfast→ultrafast"])
        #expect(outcome.events.allSatisfy { $0.isTaken })
        #expect(outcome.summary.encoderSpeedChanges == outcome.events)
        #expect(outcome.events.first?.description.hasPrefix("encoder overloaded at 00:01: preset veryfast → superfast") == true)
        let recovered = try #require(outcome.events.first { $0.reason == .recovered })
        #expect(recovered.time.seconds >= 11)

        // Losing no frame: every frame present once, in order, across each switch.
        #expect(outcome.summary.frames == 480)
        #expect(outcome.summary.droppedFrames == 0)
        let counters = try MediaProbe.decodeLuma(outcome.url, width: 320, height: 240).map(\.counter)
        #expect(counters == (0..<480).map { Int64($0) })
        #expect(try decodeErrors(outcome.url) == "")

        // One video stream with rising decoding times, a keyframe where each encoder began.
        let probed = try probePackets(outcome.url)
        #expect(probed.videoStreams == 1)
        #expect(probed.dts.count == 480)
        #expect(zip(probed.dts, probed.dts.dropFirst()).allSatisfy { $0 < $1 }, "DTS rises monotonically")

        // Every sink saw one stream: the same stream object throughout, DTS rising, and an x264
        // SEI (from each new encoder) at the start and at each switch, with the stepped preset.
        let log = outcome.log.entries
        #expect(outcome.log.streamsAdded == 1)
        #expect(Set(log.map(\.stream)).count == 1)
        #expect(log.count == 480)
        #expect(zip(log, log.dropFirst()).allSatisfy { $0.dts < $1.dts })
        #expect(log.compactMap(\.subme) == [2, 1, 0, 1, 0], "one encoder per preset: veryfast, superfast, ultrafast, superfast, ultrafast")
        #expect(log.filter { $0.subme != nil }.allSatisfy { $0.keyframe }, "each encoder starts with an IDR")

        // The replay buffer, fed by the same encoders, saves a clean file with every frame.
        let replayCounters = try MediaProbe.decodeLuma(outcome.replay, width: 320, height: 240).map(\.counter)
        #expect(replayCounters.count >= 420)
        let first = try #require(replayCounters.first ?? nil)
        #expect(replayCounters == (0..<Int64(replayCounters.count)).map { first + $0 }, "consecutive frames")
        #expect(try decodeErrors(outcome.replay) == "")
    }

    /// From a preset with a long lookahead (medium: 40 frames), whose flush once stalled the
    /// recorder for seconds and was refused: now flushed beside the recording, it steps down
    /// like the others, and the file still has every frame once.
    @Test func stepsDownFromMediumLosingNoFrame() async throws {
        var costs = Self.costs
        costs["medium"] = MediaTime(value: 80, timescale: 1000)
        let outcome = try await record(seconds: 6, preset: "medium", costs: costs)
        let steps = outcome.events.map { "\($0.reason.rawValue) \($0.fromPreset)→\($0.toPreset)" }
        #expect(steps == ["overloaded medium→veryfast", "overloaded veryfast→superfast", "overloaded superfast→ultrafast"])
        #expect(outcome.events.allSatisfy { $0.isTaken })
        #expect(outcome.summary.frames == 180)
        #expect(outcome.summary.droppedFrames == 0)
        let counters = try MediaProbe.decodeLuma(outcome.url, width: 320, height: 240).map(\.counter)
        #expect(counters == (0..<180).map { Int64($0) })
        #expect(try decodeErrors(outcome.url) == "")
        let log = outcome.log.entries
        #expect(log.count == 180)
        #expect(zip(log, log.dropFirst()).allSatisfy { $0.dts < $1.dts })
        #expect(log.compactMap(\.subme) == [7, 2, 1, 0], "one encoder per preset: medium, veryfast, superfast, ultrafast")
    }

    @Test func noAdaptKeepsThePreset() async throws {
        let outcome = try await record(seconds: 4, adapts: false)
        #expect(outcome.events.isEmpty)
        #expect(outcome.summary.encoderSpeedChanges.isEmpty)
        #expect(outcome.log.entries.compactMap(\.subme) == [2], "one veryfast encoder throughout")
        #expect(outcome.summary.frames == 120)
        let counters = try MediaProbe.decodeLuma(outcome.url, width: 320, height: 240).map(\.counter)
        #expect(counters == (0..<120).map { Int64($0) })
    }

    @Test func anEncoderThatCannotChangeSpeedSaysSoOnce() async throws {
        try #require(EncoderAvailability.encoder(for: .hevc) != nil, "this FFmpeg has libx265 (Debian's has)")
        let outcome = try await record(seconds: 3, codec: .hevc)
        #expect(outcome.events.count == 1)
        let refused = try #require(outcome.events.first)
        #expect(!refused.isTaken)
        #expect(refused.refusal?.contains("not adapted") == true)
        #expect(refused.description.contains("preset kept at veryfast"))
        #expect(outcome.summary.frames == 90)
        #expect(try MediaProbe.decodeLuma(outcome.url, width: 320, height: 240).count == 90)
    }
}
