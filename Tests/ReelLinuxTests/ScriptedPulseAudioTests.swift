import Foundation
import ReelCore
@testable import ReelLinux
import Synchronization
import Testing

/// The PulseAudio source on a scripted server: times, drift, a server restart and a stop
/// while connecting, on a manual clock, exactly.
@Suite("PulseAudio source on a scripted server")
struct ScriptedPulseAudioTests {
    static let format = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2)

    /// Collects what the source delivers and reports, and when (on the manual clock).
    final class Capture: Sendable {
        let clock = ManualClock(start: MediaTime(value: 1, timescale: 1))
        let buffers = Mutex<[AudioBuffer]>([])
        let events = Mutex<[(SourceEvent, MediaTime)]>([])

        var context: SourceContext {
            SourceContext(id: SourceID(1), clock: clock, origin: .zero,
                          deliver: { [self] sample in
                              if case .audio(let buffer) = sample { buffers.withLock { $0.append(buffer) } }
                          },
                          report: { [self] event in
                              let now = clock.now()
                              events.withLock { $0.append((event, now)) }
                          })
        }

        var received: [AudioBuffer] { buffers.withLock { $0 } }

        /// When events of the kind `matches` were reported.
        func times(of matches: (SourceEvent) -> Bool) -> [MediaTime] {
            events.withLock { $0.filter { matches($0.0) }.map(\.1) }
        }
    }

    /// The scripted frame number that a buffer's first frame holds.
    static func firstFrame(of buffer: AudioBuffer) -> Int64 {
        let bits = buffer.data.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
        return Int64(Float(bitPattern: UInt32(littleEndian: bits)))
    }

    static func ticks(_ time: MediaTime) -> Int64 { time.convertedValue(to: 48_000) }

    static func milliseconds(_ value: Int64) -> MediaTime { MediaTime(value: value, timescale: 1000) }

    /// Steps of 10 ms buffers that arrive on time.
    static func steady(_ count: Int, latency: MediaTime = .zero) -> [ScriptedPulseAudioServer.Step] {
        Array(repeating: .data(frames: 480, after: milliseconds(10), latency: latency), count: count)
    }

    /// Plays `answers` to a microphone and returns what it delivered.
    static func record(_ answers: [ScriptedPulseAudioServer.Answer]) throws -> (Capture, ScriptedPulseAudioServer) {
        let capture = Capture()
        let server = ScriptedPulseAudioServer(clock: capture.clock, answers: answers)
        let source = PulseAudioSource.microphone(source: "mic", server: nil, format: format, audioServer: server)
        try source.start(capture.context)
        server.waitUntilPlayedOut()
        source.stop()
        #expect(server.openRecordings == 0, "the stream was closed")
        return (capture, server)
    }

    @Test func buffersCarryTheCaptureTimeOfTheirSamples() throws {
        // The first 480 frames arrive at 1.010 s, captured 5 ms earlier: frame 0 was at 0.995 s.
        let (capture, _) = try Self.record([.stream(Self.steady(50, latency: Self.milliseconds(5)))])
        let buffers = capture.received
        #expect(buffers.count == 50)
        for (k, buffer) in buffers.enumerated() {
            #expect(Self.ticks(buffer.presentationTime) == 47_760 + 480 * Int64(k))
            #expect(buffer.frameCount == 480)
            #expect(Self.firstFrame(of: buffer) == 480 * Int64(k), "buffer \(k) holds the frames in order")
        }
    }

    @Test func lateArrivalsMoveNoTimes() throws {
        // Every 40 ms: 10 ms on time, 10 ms seen 17 ms late, then 20 ms at once.
        var steps: [ScriptedPulseAudioServer.Step] = []
        for _ in 0..<25 {
            steps += [.data(frames: 480, after: Self.milliseconds(10)),
                      .data(frames: 480, after: Self.milliseconds(27)),
                      .data(frames: 960, after: Self.milliseconds(3))]
        }
        let (capture, _) = try Self.record([.stream(steps)])
        let buffers = capture.received
        #expect(buffers.count == 100)
        for (k, buffer) in buffers.enumerated() {
            #expect(Self.ticks(buffer.presentationTime) == 48_000 + 480 * Int64(k), "buffer \(k)")
        }
    }

    @Test func droppedDataLeavesAGapAndEarlyDataNeverOverlaps() throws {
        // 1 s steady; the server drops 100 ms; 1.5 s steady; 50 ms more data than time passed; 1.5 s steady.
        let steps = Self.steady(100) + [.data(frames: 480, after: Self.milliseconds(110))] + Self.steady(150)
            + [.data(frames: 480 + 2_400, after: Self.milliseconds(10))] + Self.steady(150)
        let (capture, _) = try Self.record([.stream(steps)])
        let buffers = capture.received
        var gaps: [Int64] = []
        for (previous, next) in zip(buffers, buffers.dropFirst()) {
            let gap = Self.ticks(next.presentationTime) - Self.ticks(previous.endTime)
            #expect(gap >= 0, "buffers overlap by \(-gap) ticks at \(next.presentationTime)")
            if gap != 0 { gaps.append(gap) }
            #expect(Self.firstFrame(of: next) > Self.firstFrame(of: previous), "no frame is delivered twice")
        }
        #expect(gaps == [4_800], "one gap, of the 100 ms the server dropped")
        // At the end the count agrees with the clock again: the last buffer ends when it arrived.
        #expect(buffers.last?.endTime == capture.clock.now())
    }

    @Test func aServerRestartIsBridgedAndTheCountReanchored() throws {
        let first = Self.steady(30) + [.serverGone(after: Self.milliseconds(10))]
        let (capture, server) = try Self.record([.stream(first), .refused, .refused, .stream(Self.steady(30))])
        let lost = capture.times { if case .interrupted = $0 { return true } else { return false } }
        let resumed = capture.times { if case .resumed = $0 { return true } else { return false } }
        #expect(lost.count == 1)
        #expect(resumed.count == 1)
        guard let lostAt = lost.first, let resumedAt = resumed.first else { return }
        // Asked again once a second: refused twice, back at the third attempt.
        #expect(resumedAt - lostAt == MediaTime(value: 3, timescale: 1))
        #expect(server.connectionAttempts == 4)
        let buffers = capture.received
        #expect(buffers.count == 60)
        guard buffers.count == 60 else { return }
        #expect(buffers[29].endTime == MediaTime(value: 13, timescale: 10), "the first stream ended at 1.3 s")
        // The new stream's count is anchored to the clock: it starts when the server came back.
        #expect(buffers[30].presentationTime == resumedAt)
        for k in 31..<60 {
            #expect(buffers[k].presentationTime == buffers[k - 1].endTime)
        }
    }

    @Test func aStopWhileConnectingLeavesNothingOpen() throws {
        let capture = Capture()
        let server = ScriptedPulseAudioServer(clock: capture.clock, answers: [.hangs])
        let source = PulseAudioSource.microphone(source: "mic", server: nil, format: Self.format, audioServer: server)
        let started = DispatchSemaphore(value: 0)
        let startError = Mutex<(any Error)?>(nil)
        Thread.detachNewThread {
            do { try source.start(capture.context) } catch { startError.withLock { $0 = error } }
            started.signal()
        }
        server.waitUntilAttemptHangs()
        source.stop()
        started.wait()
        #expect(startError.withLock { $0 } == nil, "a start that the stop overtook does not fail")
        #expect(server.openRecordings == 0)
        #expect(capture.received.isEmpty)
        // It is stopped, not stuck half-started: it starts again.
        let again = ScriptedPulseAudioServer(clock: capture.clock, answers: [.stream(Self.steady(3))])
        let second = PulseAudioSource.microphone(source: "mic", server: nil, format: Self.format, audioServer: again)
        try second.start(capture.context)
        again.waitUntilPlayedOut()
        second.stop()
        #expect(capture.received.count == 3)
    }

    @Test func aMissingDeviceIsNamed() {
        let server = ScriptedPulseAudioServer(clock: ManualClock(), answers: [.noDevice])
        let source = PulseAudioSource.microphone(source: "usb-mic", server: nil, format: Self.format, audioServer: server)
        do {
            _ = try source.prepare()
            Issue.record("prepare should fail")
        } catch let error as ReelError {
            #expect(error.code == .sourceUnavailable)
            #expect(error.message.contains("usb-mic"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
