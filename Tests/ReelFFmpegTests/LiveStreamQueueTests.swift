import Foundation
import Testing
import ReelCore
@testable import ReelFFmpeg
import ReelTestSupport

/// The live stream's send queue on real encoded packets (the test pattern and tone, a keyframe
/// every 2 s): a consumer slower than the stream gets whole groups of pictures, each after a
/// gap starting on a keyframe, within the byte bound, with every drop counted.
@Suite struct LiveStreamQueueTests {
    /// Takes every packet the encoder makes.
    final class Collector: PacketSink {
        var packets: [EncodedPacket] = []
        func add(_ stream: EncodedStream) throws {}
        func write(_ packet: EncodedPacket) throws -> SinkFlow { packets.append(packet); return .ok }
        func finish() throws {}
    }

    /// Ten seconds of encoded video and audio, in the order the encoder handed them out.
    static let packets: [EncodedPacket] = {
        let collector = Collector()
        let recording = try! SyntheticRecording(sinks: [collector], preset: "ultrafast")
        try! recording.feed(300)
        try! recording.encoder!.finish()
        return collector.packets
    }()

    func frameNumber(_ p: EncodedPacket) -> Int64 { p.presentationTime.convertedValue(to: 30, rounding: .nearest) }

    @Test func aSlowConsumerGetsWholeGroupsWithinTheBound() throws {
        let packets = Self.packets
        let video = packets.filter { $0.stream.kind == .video }
        #expect(video.filter(\.isKeyframe).count == 5, "a keyframe every 60 frames")
        let largest = Int64(packets.map(\.byteCount).max()!)
        var queue = LiveStreamQueue(maxBytes: 64 * 1024)
        queue.hasVideo = true
        var sent: [EncodedPacket] = []
        // The consumer takes one packet for every three the encoder makes: a link at a third of
        // the stream's rate (in packets).
        for (i, packet) in packets.enumerated() {
            queue.push(packet)
            if i % 3 == 2, let next = queue.pop() { sent.append(next) }
        }
        while let next = queue.pop() { sent.append(next) }
        #expect(queue.mostBytes <= 64 * 1024 + largest, "the queue stays within its bound (one packet over at most)")
        let sentVideo = sent.filter { $0.stream.kind == .video }
        #expect(queue.droppedFrames > 0 && queue.droppedGroups > 0)
        #expect(Int64(sentVideo.count) + queue.droppedFrames == Int64(video.count), "every frame is sent or counted as dropped")
        #expect(Int64(sent.count) + queue.droppedPackets == Int64(packets.count))
        #expect(queue.droppedBytes == packets.reduce(0) { $0 + Int64($1.byteCount) } - sent.reduce(0) { $0 + Int64($1.byteCount) })
        let numbers = sentVideo.map(frameNumber)
        #expect(numbers == numbers.sorted(), "in order")
        for i in sentVideo.indices.dropFirst() where numbers[i] != numbers[i - 1] + 1 {
            #expect(sentVideo[i].isKeyframe, "frame \(numbers[i]) after a gap is a keyframe")
        }
    }

    @Test func aNewConnectionStartsOnAKeyframe() throws {
        let packets = Self.packets
        var queue = LiveStreamQueue(maxBytes: 64 << 20)
        queue.hasVideo = true
        // Everything up to frame 70 waits (the second group has begun at frame 60), then the
        // connection is new: what waits before the next keyframe goes.
        let upTo = packets.firstIndex { $0.stream.kind == .video && frameNumber($0) == 70 }!
        for packet in packets[...upTo] { queue.push(packet) }
        // The first group is sent; then the connection breaks in the second one.
        while let next = queue.pop(), !(next.stream.kind == .video && frameNumber(next) == 62) {}
        queue.awaitKeyframe()
        #expect(queue.isEmpty, "frames 63–70 cannot start a stream")
        #expect(queue.droppedGroups == 1)
        for packet in packets[(upTo + 1)...] { queue.push(packet) }
        let next = queue.pop()
        let first = try #require(next)
        #expect(first.stream.kind == .video && first.isKeyframe && frameNumber(first) == 120,
                "the stream resumes at the next keyframe, not \(frameNumber(first))")
        #expect(queue.droppedFrames == 120 - 63)
    }

    /// Back after an outage the stream goes on live: the groups that waited during it go (and
    /// are counted), and sending resumes at the newest keyframe waiting.
    @Test func aConnectionBackAfterAnOutageResumesAtTheNewestKeyframe() throws {
        let packets = Self.packets
        var queue = LiveStreamQueue(maxBytes: 64 << 20)
        queue.hasVideo = true
        // The outage: everything up to frame 250 waits (keyframes at 0, 60, 120, 180, 240).
        let upTo = packets.firstIndex { $0.stream.kind == .video && frameNumber($0) == 250 }!
        for packet in packets[...upTo] { queue.push(packet) }
        queue.awaitKeyframe(latest: true)
        let next = queue.pop()
        let first = try #require(next)
        #expect(first.stream.kind == .video && first.isKeyframe && frameNumber(first) == 240,
                "the newest keyframe waiting, not \(frameNumber(first))")
        #expect(queue.droppedFrames == 240, "frames 0–239 went")
        #expect(queue.droppedGroups == 4, "four whole groups")
    }
}
