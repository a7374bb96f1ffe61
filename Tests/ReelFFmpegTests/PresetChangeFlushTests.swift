import Foundation
import Testing
import ReelCore
@testable import ReelFFmpeg
import ReelTestSupport

/// The replaced encoder of a preset change is flushed on a thread of its own: the recorder's
/// thread goes on encoding with the new one meanwhile, and every sink still takes all of the
/// old encoder's packets first, then the new one's, each frame once, decoding times rising.
/// A flush is held (or failed) through ``StreamEncoder/beforeVideoFlush`` where a test needs
/// it to still be running; no wall-clock time decides a result.
@Suite struct PresetChangeFlushTests {
    final class Collected: PacketSink, @unchecked Sendable {
        var packets: [EncodedPacket] = []
        func add(_ stream: EncodedStream) throws {}
        func write(_ packet: EncodedPacket) throws -> SinkFlow { packets.append(packet); return .ok }
        func finish() throws {}
        /// The frame number of each packet, in the order written.
        var frames: [Int64] { packets.map { Int64(($0.presentationTime.seconds * 30).rounded()) } }
        var decodingTimesRise: Bool {
            let dts = packets.map(\.decodeTime)
            return zip(dts, dts.dropFirst()).allSatisfy { $0 < $1 }
        }
    }

    /// Holds a flush until released; one that is never released fails the flush (after a
    /// minute) rather than hanging the test.
    final class Gate: Sendable {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        var hook: @Sendable () throws -> Void {
            { [self] in
                entered.signal()
                guard release.wait(timeout: .now() + 60) == .success else {
                    throw ReelError(.notRunning, "the test never released the flush")
                }
            }
        }
    }

    static let size = PixelSize(width: 320, height: 240)
    static let rate = FrameRate(30)

    func encoder(preset: String = "veryfast") throws -> (StreamEncoder, Collected, Collected) {
        var settings = VideoSettings(codec: .h264, frameRate: Self.rate)
        settings.preset = preset
        let encoder = try StreamEncoder(video: AssetWriter.VideoTrack(settings: settings, inputFormat: .yuv420p, inputSize: Self.size), audio: [])
        let first = Collected(), second = Collected()
        try encoder.addSink(first)
        try encoder.addSink(second)
        return (encoder, first, second)
    }

    @Test func framesAreEncodedWhileTheOldEncoderIsStillBeingFlushed() throws {
        let (encoder, sink, other) = try encoder()
        let gate = Gate()
        encoder.beforeVideoFlush = gate.hook
        try feedTestPattern(encoder, frames: 0..<40)
        let before = sink.packets.count
        #expect(before < 40, "veryfast holds frames back")
        #expect(try encoder.changeVideoPreset(to: "superfast") == .changed)
        gate.entered.wait()
        // The flush is held: frames still go in, and return.
        try feedTestPattern(encoder, frames: 40..<80)
        #expect(sink.packets.count == before, "the new encoder's packets wait for the old one's last")
        #expect(try encoder.changeVideoPreset(to: "ultrafast") == .deferred, "one flush at a time")
        #expect(encoder.videoPreset == "superfast")
        gate.release.signal()
        try feedTestPattern(encoder, frames: 80..<90)
        try encoder.finish()

        for s in [sink, other] {
            #expect(s.frames.count == 90)
            #expect(s.frames.prefix(40).sorted() == Array(0..<40), "the old encoder's packets first")
            #expect(s.frames.dropFirst(40).sorted() == Array(40..<90))
            #expect(s.decodingTimesRise)
        }
        #expect(other.packets.map(\.presentationTime) == sink.packets.map(\.presentationTime))
    }

    /// A step, one frame, a second step while the first's flush still runs (deferred), then
    /// finishing: finishing waits for the flush.
    @Test func aChangeRightBeforeFinishingLosesNothing() throws {
        let (encoder, sink, _) = try encoder()
        let gate = Gate()
        encoder.beforeVideoFlush = gate.hook
        try feedTestPattern(encoder, frames: 0..<40)
        #expect(try encoder.changeVideoPreset(to: "superfast") == .changed)
        gate.entered.wait()
        try feedTestPattern(encoder, frames: 40..<41)
        #expect(try encoder.changeVideoPreset(to: "ultrafast") == .deferred)
        gate.release.signal()
        try encoder.finish()
        #expect(sink.frames.prefix(40).sorted() == Array(0..<40))
        #expect(sink.frames.count == 41 && sink.frames.last == 40)
        #expect(sink.decodingTimesRise)
    }

    @Test func aChangeWithNoFrameAfterItLosesNothing() throws {
        let (encoder, sink, _) = try encoder()
        try feedTestPattern(encoder, frames: 0..<40)
        #expect(try encoder.changeVideoPreset(to: "superfast") == .changed)
        try encoder.finish()
        #expect(sink.frames.sorted() == Array(0..<40))
        #expect(sink.decodingTimesRise)
    }

    /// Steps asked for at every few frames, some while a flush still runs (deferred then), into
    /// a file and a sink: each frame is in both exactly once, in order of decoding.
    @Test func manyStepsInARowLoseNoFrame() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("steps.mp4")
        let writer = try veryfastTestPatternWriter(url)
        let sink = Collected()
        try writer.addSink(sink)
        let gate = Gate()
        let pool = FramePool(format: .yuv420p, size: Self.size, capacity: 2)
        let presets = ["superfast", "ultrafast", "veryfast"]
        var changed = 0, asksWhileHeld = 0
        var heldAt: Int64?
        var gateUsed = false
        for index in Int64(0)..<200 {
            let frame = try #require(pool.makeFrame())
            try TestPattern.draw(index: index, flash: false, into: frame)
            try #require(try writer.appendVideo(frame, at: Self.rate.time(ofFrame: index)))
            if let at = heldAt, index == at + 30 { gate.release.signal(); heldAt = nil }
            guard index >= 20, index % 7 == 0 else { continue }
            // From frame 95 the next step's flush is held for 30 frames: the steps asked for
            // meanwhile are deferred. (Other steps may be deferred too, while a real flush runs.)
            if index >= 95 && !gateUsed {
                // A real flush may still run on a busy machine, and would defer the step to be
                // held (the test failed so under load): it ends first.
                try writer.encoder?.waitForVideoFlush()
                writer.encoder?.beforeVideoFlush = gate.hook
            }
            let outcome = try writer.changeVideoPreset(to: presets[changed % presets.count])
            if heldAt != nil {
                asksWhileHeld += 1
                #expect(outcome == .deferred)
            }
            switch outcome {
            case .changed:
                changed += 1
                if writer.encoder?.beforeVideoFlush != nil {
                    gate.entered.wait()
                    writer.encoder?.beforeVideoFlush = nil
                    gateUsed = true
                    heldAt = index
                }
            case .deferred: break
            case .refused(let why): Issue.record("refused: \(why)")
            }
        }
        _ = try writer.finish()
        #expect(gateUsed && asksWhileHeld == 4)
        #expect(changed >= 2)
        #expect(sink.frames.sorted() == Array(0..<200))
        #expect(sink.decodingTimesRise)
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters == (0..<200).map { Optional($0) })
    }

    @Test func anErrorOfTheFlushSurfacesAtTheNextFrame() throws {
        let (encoder, sink, _) = try encoder()
        let gate = Gate()
        encoder.beforeVideoFlush = { [gate] in
            try gate.hook()
            throw ReelError(.encodingFailed, "injected flush failure")
        }
        try feedTestPattern(encoder, frames: 0..<40)
        #expect(try encoder.changeVideoPreset(to: "superfast") == .changed)
        gate.entered.wait()
        try feedTestPattern(encoder, frames: 40..<45)
        gate.release.signal()
        // The flush's thread fails at once; the recorder's thread learns of it at a frame
        // after that (it does not wait for it: polled, at most a minute).
        var thrown: ReelError?
        let pool = FramePool(format: .yuv420p, size: Self.size, capacity: 2)
        var index: Int64 = 45
        while thrown == nil, index < 60_000 {
            let frame = try #require(pool.makeFrame())
            try TestPattern.draw(index: index, flash: false, into: frame)
            do {
                try encoder.appendVideo(frame, at: Self.rate.time(ofFrame: index))
                usleep(1000)
            } catch let error as ReelError {
                thrown = error
            }
            index += 1
        }
        #expect(thrown?.message == "injected flush failure")
        #expect(sink.frames.allSatisfy { $0 < 40 }, "the new encoder's packets did not pass the failed flush")
        // Once: what follows goes on (the new encoder's held packets, decoding later still).
        try encoder.finish()
        #expect(sink.decodingTimesRise)
        #expect(sink.frames.filter { $0 >= 40 }.count > 5)
    }

    @Test func anErrorOfTheFlushSurfacesAtFinish() throws {
        let (encoder, _, _) = try encoder()
        encoder.beforeVideoFlush = { throw ReelError(.encodingFailed, "injected flush failure") }
        try feedTestPattern(encoder, frames: 0..<40)
        #expect(try encoder.changeVideoPreset(to: "superfast") == .changed)
        encoder.beforeVideoFlush = nil
        let error = #expect(throws: ReelError.self) { try encoder.finish() }
        #expect(error?.message == "injected flush failure")
    }

    /// A sink that fails on one of the old encoder's last packets (written after the change,
    /// from what the flush gave): its error reaches the caller on the recorder's thread.
    @Test func aSinkErrorOnAFlushedPacketSurfacesToTheCaller() throws {
        final class FailingAt: PacketSink {
            let frame: Int64
            init(frame: Int64) { self.frame = frame }
            func add(_ stream: EncodedStream) throws {}
            func write(_ packet: EncodedPacket) throws -> SinkFlow {
                if Int64((packet.presentationTime.seconds * 30).rounded()) == frame {
                    throw ReelError(.ioFailure, "sink failed at frame \(frame)")
                }
                return .ok
            }
            func finish() throws {}
        }
        let (encoder, sink, _) = try encoder()
        try encoder.addSink(FailingAt(frame: 39))
        let gate = Gate()
        encoder.beforeVideoFlush = gate.hook
        try feedTestPattern(encoder, frames: 0..<40)
        #expect(!sink.frames.contains(39), "frame 39 is still in the old encoder")
        #expect(try encoder.changeVideoPreset(to: "superfast") == .changed)
        gate.entered.wait()
        try feedTestPattern(encoder, frames: 40..<50)
        gate.release.signal()
        let error = #expect(throws: ReelError.self) { try encoder.finish() }
        #expect(error?.message == "sink failed at frame 39")
        #expect(sink.frames.contains(39), "the sinks before the failing one took it")
    }

    @Test func abandoningDoesNotWaitForTheFlushAndKeepsWhatCameOut() throws {
        let (encoder, sink, _) = try encoder()
        let gate = Gate()
        encoder.beforeVideoFlush = gate.hook
        try feedTestPattern(encoder, frames: 0..<40)
        let before = sink.frames
        #expect(try encoder.changeVideoPreset(to: "superfast") == .changed)
        gate.entered.wait()
        try feedTestPattern(encoder, frames: 40..<70)
        encoder.abandon()
        gate.release.signal()
        // What the old encoder had given, then the new one's packets (it starts with an IDR):
        // the frames still in the old encoder are lost, as abandoning loses what is in an encoder.
        #expect(Array(sink.frames.prefix(before.count)) == before)
        let after = Array(sink.frames.dropFirst(before.count))
        #expect(!after.isEmpty && after.allSatisfy { $0 >= 40 })
        #expect(sink.packets[before.count].isKeyframe)
        #expect(sink.decodingTimesRise)
    }
}
