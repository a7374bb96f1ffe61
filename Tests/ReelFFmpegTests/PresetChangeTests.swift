import Foundation
import Testing
import ReelCore
@testable import ReelFFmpeg
import ReelTestSupport

/// Changing a stream encoder's preset within one stream: the new encoder's header is checked
/// to be the old one's, the sinks see one stream, and a change that cannot be made changes
/// nothing.
@Suite struct PresetChangeTests {
    final class Collected: PacketSink, @unchecked Sendable {
        var streams: [EncodedStream] = []
        var packets: [EncodedPacket] = []
        func add(_ stream: EncodedStream) throws { streams.append(stream) }
        func write(_ packet: EncodedPacket) throws -> SinkFlow { packets.append(packet); return .ok }
        func finish() throws {}
    }

    static let size = PixelSize(width: 320, height: 240)
    static let rate = FrameRate(30)

    func encoder(codec: VideoCodec = .h264, preset: String = "veryfast") throws -> (StreamEncoder, Collected) {
        var settings = VideoSettings(codec: codec, frameRate: Self.rate)
        settings.preset = preset
        let encoder = try StreamEncoder(video: AssetWriter.VideoTrack(settings: settings, inputFormat: .yuv420p, inputSize: Self.size), audio: [])
        let sink = Collected()
        try encoder.addSink(sink)
        return (encoder, sink)
    }

    @Test func changesPresetInOneStreamWithAKeyframeAtEachChange() throws {
        let (encoder, sink) = try encoder()
        // Nothing has come out yet: the header's options are not known, so not now.
        try feedTestPattern(encoder, frames: 0..<1)
        #expect(try encoder.changeVideoPreset(to: "superfast") == .deferred)
        try feedTestPattern(encoder, frames: 1..<40)
        let header = try #require(encoder.video).extradata
        #expect(try encoder.changeVideoPreset(to: "superfast") == .changed)
        #expect(encoder.videoPreset == "superfast")
        #expect(sink.packets.count <= 40, "the old encoder is flushed on a thread of its own")
        try feedTestPattern(encoder, frames: 40..<80)
        // The first change's flush runs on a thread of its own: until it has ended (a loaded
        // machine may take a while) a second change waits, and is asked again.
        var second = try encoder.changeVideoPreset(to: "ultrafast")
        let deadline = Date().addingTimeInterval(60)
        while second == .deferred && Date() < deadline {
            usleep(10_000)
            second = try encoder.changeVideoPreset(to: "ultrafast")
        }
        #expect(second == .changed)
        #expect(try #require(encoder.video).extradata == header)
        try feedTestPattern(encoder, frames: 80..<120)
        try encoder.finish()

        #expect(sink.streams.count == 1)
        #expect(sink.packets.count == 120)
        #expect(sink.packets.allSatisfy { $0.stream === sink.streams[0] })
        let dts = sink.packets.map(\.decodeTime)
        #expect(zip(dts, dts.dropFirst()).allSatisfy { $0 < $1 }, "decoding times rise across each change")
        #expect(Set(sink.packets.map(\.presentationTime)) == Set((0..<120).map { Self.rate.time(ofFrame: $0) }))
        // Each encoder's packets in one run: all of the old one's before any of the new one's.
        let frames = sink.packets.map { Int64(($0.presentationTime.seconds * 30).rounded()) }
        #expect(frames.prefix(40).allSatisfy { $0 < 40 } && frames[40..<80].allSatisfy { (40..<80).contains($0) })
        for first in [Int64(40), 80] {
            let packet = try #require(sink.packets.first { $0.presentationTime == Self.rate.time(ofFrame: first) })
            #expect(packet.isKeyframe, "frame \(first) begins the new encoder's stream")
        }
    }

    /// Frames dropped on either side of a change (what a recorder that fell behind does):
    /// x264 starts a new stream's decoding times by the gap between its first frames, which
    /// would put them before the old encoder's last; they still rise, and never pass the
    /// presentation times, in the sinks and in a file.
    @Test(arguments: [[Int64](), [1, 2, 3], [1, 5, 6, 7], [0, 4]])
    func decodingTimesRiseWhenFramesAreMissingAroundAChange(_ droppedAfter: [Int64]) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("gaps.mp4")
        let writer = try veryfastTestPatternWriter(url)
        let sink = Collected()
        try writer.addSink(sink)
        let pool = FramePool(format: .yuv420p, size: Self.size, capacity: 2)
        // Frames 0–39 but 37 and 38, the change, then 40… with `droppedAfter` (offsets from 40) left out.
        var fed: [Int64] = []
        func feed(_ index: Int64) throws {
            let frame = try #require(pool.makeFrame())
            try TestPattern.draw(index: index, flash: false, into: frame)
            try #require(try writer.appendVideo(frame, at: Self.rate.time(ofFrame: index)))
            fed.append(index)
        }
        for i in Int64(0)..<40 where i != 37 && i != 38 { try feed(i) }
        #expect(try writer.changeVideoPreset(to: "ultrafast") == .changed)
        for i in Int64(40)..<70 where !droppedAfter.contains(i - 40) { try feed(i) }
        _ = try writer.finish()

        #expect(sink.packets.count == fed.count)
        #expect(sink.packets.allSatisfy { $0.decodeTime <= $0.presentationTime })
        let dts = sink.packets.map(\.decodeTime)
        #expect(zip(dts, dts.dropFirst()).allSatisfy { $0 < $1 })
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters == fed.map { Optional($0) })
    }

    /// From `faster` (more lookahead, weighted prediction 2) to the quicker ones, the pinned
    /// header is still the first one.
    @Test(arguments: [("faster", "veryfast"), ("faster", "ultrafast")])
    func changesFromASlowerPreset(_ from: String, _ to: String) throws {
        let (encoder, sink) = try encoder(preset: from)
        try feedTestPattern(encoder, frames: 0..<100)
        #expect(try encoder.changeVideoPreset(to: to) == .changed)
        try feedTestPattern(encoder, frames: 100..<120)
        try encoder.finish()
        #expect(sink.packets.count == 120)
        let dts = sink.packets.map(\.decodeTime)
        #expect(zip(dts, dts.dropFirst()).allSatisfy { $0 < $1 })
    }

    /// A preset slower than `faster` looks far ahead (medium 40 frames, veryslow 60): flushing
    /// it on the recorder's thread stalled a 1080p60 recording for 2–3 s; flushed on a thread of
    /// its own it stalls nothing, so these adapt too, their header (more reference frames, the
    /// B-pyramid, weighted prediction) pinned for the quicker encoder.
    @Test(arguments: ["fast", "medium", "slow", "veryslow"])
    func slowPresetsAdaptToo(_ from: String) throws {
        let (encoder, sink) = try encoder(preset: from)
        try feedTestPattern(encoder, frames: 0..<100)
        let header = try #require(encoder.video).extradata
        #expect(try encoder.changeVideoPreset(to: "veryfast") == .changed)
        #expect(encoder.videoPreset == "veryfast")
        #expect(try #require(encoder.video).extradata == header)
        try feedTestPattern(encoder, frames: 100..<130)
        try encoder.finish()
        #expect(sink.packets.count == 130)
        let frames = sink.packets.map { Int64(($0.presentationTime.seconds * 30).rounded()) }
        #expect(frames.prefix(100).sorted() == Array(0..<100) && frames.dropFirst(100).sorted() == Array(100..<130))
        let dts = sink.packets.map(\.decodeTime)
        #expect(zip(dts, dts.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func aHeaderThatWouldDifferIsRefusedAndNothingChanges() throws {
        let (encoder, sink) = try encoder()
        try feedTestPattern(encoder, frames: 0..<30)
        let pinned = try #require(encoder.pinnedVideoHeader)
        #expect(pinned.contains("cabac=1") && pinned.contains("bframes=3"))
        // Pinned to other values: the new encoder's SPS/PPS differ, so the change is refused.
        encoder.pinnedVideoHeader = pinned.replacingOccurrences(of: "cabac=1", with: "cabac=0")
        let outcome = try encoder.changeVideoPreset(to: "superfast")
        guard case .refused(let why) = outcome else { Issue.record("not refused: \(outcome)"); return }
        #expect(why.contains("another stream header"))
        #expect(encoder.videoPreset == "veryfast")
        try feedTestPattern(encoder, frames: 30..<60)
        try encoder.finish()
        #expect(sink.packets.count == 60)
        #expect(sink.packets.filter(\.isKeyframe).count == 1, "the old encoder went on: no new IDR")
    }

    @Test func otherEncodersAreNotAdapted() throws {
        try #require(EncoderAvailability.encoder(for: .vp9) != nil)
        let (encoder, _) = try encoder(codec: .vp9, preset: "ultrafast")
        try feedTestPattern(encoder, frames: 0..<10)
        #expect(try encoder.changeVideoPreset(to: "ultrafast") == .refused("libvpx-vp9 cannot change its speed within a stream: not adapted"))
        try encoder.finish()
    }
}

/// Appends the test pattern's frames `frames` (320x240 at 30 fps, what the preset-change tests
/// encode) to `encoder`, each in its own slot.
func feedTestPattern(_ encoder: StreamEncoder, frames: Range<Int64>) throws {
    let size = PixelSize(width: 320, height: 240), rate = FrameRate(30)
    let pool = FramePool(format: .yuv420p, size: size, capacity: 2)
    for index in frames {
        let frame = try #require(pool.makeFrame())
        try TestPattern.draw(index: index, flash: false, into: frame)
        try #require(try encoder.appendVideo(frame, at: rate.time(ofFrame: index)))
    }
}

/// A file writer of the test pattern's size and rate (see ``feedTestPattern(_:frames:)``) at
/// veryfast, the preset the adapter steps down from.
func veryfastTestPatternWriter(_ url: URL) throws -> AssetWriter {
    var settings = VideoSettings(codec: .h264, frameRate: FrameRate(30))
    settings.preset = "veryfast"
    return try AssetWriter(configuration: AssetWriter.Configuration(
        url: url, video: AssetWriter.VideoTrack(settings: settings, inputFormat: .yuv420p, inputSize: PixelSize(width: 320, height: 240)),
        audio: []))
}
