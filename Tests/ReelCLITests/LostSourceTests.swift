import Foundation
import Testing
import Reel
import ReelTestSupport

/// Sources that go away while `reel record` runs: the recording carries on with the others,
/// or ends cleanly when none is left, and what was recorded plays.
@Suite(.serialized, .tags(.realTime)) struct LostSourceTests {
    /// Runs `reel record ARGS` and calls `whileRunning` after `after` seconds; returns the exit
    /// status and what it printed.
    func record(_ args: [String], after: Double, whileRunning: @escaping () -> Void) async throws -> (status: Int32, stdout: String, stderr: String) {
        let (r, finished) = try await ReelBinary.run(["record"] + args, steps: [(after, whileRunning)])
        if !finished { Issue.record("reel did not finish") }
        return (r.status, r.output, r.stderr)
    }

    @Test func theXServerGoingAwayEndsTheScreenButTheToneGoesOn() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("screen.mkv")
        let r = try await record(["--screen=\(xvfb.display)", "--tone", "--preset", "ultrafast", "--duration", "4", "-o", url.path],
                                 after: 1.5) { xvfb.terminate() }
        // Finalised, but without the screen's end: a script tells by the exit status.
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.stderr.contains("lost screen"), "\(r.stderr)")
        #expect(r.stderr.contains("recording goes on with the other sources"), "\(r.stderr)")
        #expect(r.stdout.contains("  missing   screen") && r.stdout.contains(": lost at 00:0"), "\(r.stdout)")
        let probe = try MediaProbe.probe(url)
        let frames = try #require(probe.videoStreams.first?.frameCount)
        #expect(frames >= 20 && frames <= 60, "about 1.5 s of screen: \(frames) frames")
        // The tone went on to the end.
        let audio = try #require(probe.audioStreams.first)
        #expect((audio.duration ?? probe.duration) > 3.8, "audio for the whole 4 s: \(audio.duration ?? -1)")
    }

    @Test func aRecordingWhoseOnlySourceIsLostEndsCleanly() async throws {
        let xvfb = try XvfbServer(size: PixelSize(width: 640, height: 480))
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("only.mp4")
        let r = try await record(["--screen=\(xvfb.display)", "--preset", "ultrafast", "-o", url.path], after: 1.5) { xvfb.terminate() }
        // Not a clean stop: every source was lost (issue 26, item 19), and the exit status says so.
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.stdout.contains("every source was lost or ended"), "\(r.stdout)")
        #expect(r.stdout.contains("incomplete: a source did not record all it was asked to (exit status 3)"), "\(r.stdout)")
        #expect(r.stderr.contains("lost screen"), "\(r.stderr)")
        #expect(!r.stderr.contains("other sources"), "there are none: \(r.stderr)")
        let probe = try MediaProbe.probe(url)
        #expect((probe.videoStreams.first?.frameCount ?? 0) >= 20)
        // Finalised, not merely cut off: the index is at the front.
        let head = try FileHandle(forReadingFrom: url).read(upToCount: 1 << 16) ?? Data()
        let moov = head.range(of: Data("moov".utf8)), mdat = head.range(of: Data("mdat".utf8))
        #expect(moov != nil && (mdat == nil || moov!.lowerBound < mdat!.lowerBound))
    }
}
