import Foundation
import ReelCore
@testable import ReelLinux
import ReelSystem
import ReelTestSupport
import Testing

/// Reel's capture of its own sink on a real PipeWire daemon (application audio, linked): what
/// it could not hold is silence in its place, and said.
@Suite(.serialized, .tags(.realTime)) struct PipeWireSinkCaptureTests {
    /// Nobody reads for 6 s, and the capture holds about 4 s: what is then read is as long as
    /// the time that passed (silence where the sound did not fit, so that what comes after
    /// keeps its place), and the loss is said, about 2 s, from where that silence begins.
    @Test func soundThatDidNotFitIsSilenceInItsPlaceAndSaid() throws {
        let server = try PipeWireServer()
        let remote = try #require(server.environment["XDG_RUNTIME_DIR"]) + "/pipewire-0"
        let format = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2)
        let request = PulseRecordRequest(server: nil, device: "reel-test.monitor", lookupName: "reel-test.monitor",
                                         missingDevice: "no sink", format: format, fragmentFrames: 480, description: "test")
        let recording = try PipeWireSinkCapture(remote: remote).openRecording(request, isCancelled: { false })
        let clock = HostClock()
        var bytes: [UInt8] = []
        try recording.pump(timeoutMicroseconds: 100_000)
        _ = try recording.read(appendingTo: &bytes)
        let before = Int64(bytes.count / format.bytesPerFrame)
        _ = recording.takeLosses()
        let from = clock.now()
        usleep(6_000_000)
        // Read until what was read is as long as the time that passed, or for 2 s.
        var read: Int64 = 0
        while clock.now() - from < MediaTime(value: 8, timescale: 1) {
            bytes.removeAll(keepingCapacity: true)
            try recording.pump(timeoutMicroseconds: 20_000)
            read += Int64(try recording.read(appendingTo: &bytes) / format.bytesPerFrame)
            if read >= (clock.now() - from).convertedValue(to: 48_000) { break }
        }
        let passed = (clock.now() - from).seconds
        // (A busy machine's missed cycles may be among them: only what did not fit is looked at.)
        let losses = recording.takeLosses().filter { $0.kind == .overflow }
        let lost = Double(losses.reduce(0) { $0 + $1.frames }) / 48_000
        #expect(abs(Double(read) / 48_000 - passed) < 0.1, "read \(Double(read) / 48_000) s in \(passed) s")
        #expect(lost > 1.5 && lost < 2.6, "said lost: \(lost) s (\(losses))")
        // The first loss begins where the held 4 s end.
        if let first = losses.first {
            let at = Double(first.start - before) / 48_000
            #expect(at > 3.5 && at < 4.5, "the loss begins \(at) s after the stall began")
        }
    }
}
