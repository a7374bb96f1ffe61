import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record` killed with SIGKILL at every step of finalising in place. The finaliser makes
/// each step durable with an fsync before the next; strace kills the process when it enters the
/// k-th fsync, so the file holds that step's writes and nothing after (as a crash leaves it).
/// Every such file plays all its frames, and `reel recover` finishes the job.
@Suite(.serialized, .tags(.realTime)) struct FinaliseKillTests {
    /// The fsyncs of one in-place finalise: what the recording wrote (before the steps, so
    /// that an abort never waits for it), the index's contents, its header, the new index in
    /// force, the old one retired, the fragment headers retired, the final track IDs, the `mvex`.
    static let syncs = 8

    static func record(_ url: URL, killAtSync k: Int?) throws -> CommandResult {
        var command = ["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=fsync"]
        if let k { command += ["-e", "inject=fsync:signal=SIGKILL:when=\(k)"] }
        command += [ReelBinary.url.path, "record", "--test-pattern", "--tone", "--size", "320x240", "--faster-than-real-time",
                    "--duration", "2", "--max-duration", "2", "-o", url.path]
        return try Subprocess.run(command)
    }

    static func topLevelTypes(_ url: URL) throws -> [String] {
        let data = try Data(contentsOf: url)
        var types: [String] = []
        var offset = 0
        while offset + 8 <= data.count {
            let size = Int(data[offset..<(offset + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            types.append(String(decoding: data[(offset + 4)..<(offset + 8)], as: UTF8.self))
            guard size >= 8 else { break }
            offset += size
        }
        return types
    }

    @Test func aFinaliseDoesExactlyItsSyncs() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("whole.mp4")
        let r = try Self.record(url, killAtSync: Self.syncs + 1)
        #expect(r.status == 0, "no more fsyncs than the finaliser's: \(r.stderr)")
        #expect(!Recovery.isCutOff(url))
        let types = try Self.topLevelTypes(url)
        #expect(!types.contains("moof") && types.contains("moov"), "\(types)")
        #expect(types.dropFirst().first == "free", "the old index, blanked: finalised in place, not copied")
    }

    @Test(arguments: 1...syncs)
    func killedWhileFinalisingStillPlaysAndRecovers(_ k: Int) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("killed-\(k).mp4")
        let r = try Self.record(url, killAtSync: k)
        // strace ends by the tracee's signal: Foundation reports the signal number.
        #expect(r.status == SIGKILL, "killed at fsync \(k): status \(r.status) \(r.stderr)")

        let probe = try MediaProbe.probe(url)
        #expect(probe.videoStreams.first?.frameCount == 60, "killed at fsync \(k)")
        #expect(probe.audioStreams.count == 1)
        let decode = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "killed at fsync \(k): \(decode.stderr)")
        #expect(try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter) == (0..<60).map { Int64($0) })

        if k == Self.syncs {
            // Killed on the last fsync: every write was made; the file is finished already.
            #expect(!Recovery.isCutOff(url))
        } else {
            #expect(Recovery.isCutOff(url), "killed at fsync \(k)")
            let recovered = try ReelBinary.run(["recover", url.path])
            #expect(recovered.status == 0, "\(recovered.stderr)")
            #expect(recovered.output.contains("finalised in place"), "\(recovered.output)")
        }
        let types = try Self.topLevelTypes(url)
        #expect(!types.contains("moof") && types.filter { $0 == "moov" }.count == 1, "\(types)")
        #expect((types.firstIndex(of: "moov") ?? .max) < (types.firstIndex(of: "mdat") ?? 0))
        let finished = try MediaProbe.probe(url)
        #expect(abs((finished.videoStreams.first?.duration ?? 0) - 2.0) < 0.001)
        #expect(abs((finished.audioStreams.first?.duration ?? 0) - 2.0) < 0.025)
        #expect(try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter) == (0..<60).map { Int64($0) })
    }
}
