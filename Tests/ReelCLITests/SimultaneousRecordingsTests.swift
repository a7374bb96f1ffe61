import Foundation
import Testing
import Reel
import ReelTestSupport

/// Three `reel record`s at once, each of the test pattern and the tone, started and stopped
/// in turn (issue 26): each file holds every frame its summary counts, in order, with any frame
/// missing from it reported as dropped, and its sound whole — the tone without a gap from its
/// start to its end and the beeps a second apart. Nothing one recording does (its start, its
/// stop, its finalise) takes anything from another's.
@Suite(.serialized, .tags(.realTime)) struct SimultaneousRecordingsTests {
    struct Recording {
        var url: URL
        var duration: Double
        var process: Process
        var events: URL
    }

    @Test func threeRecordingsAtOnceEachHoldAllTheirPicturesAndSound() throws {
        let dir = try TemporaryDirectory()
        // Started 0.6 s apart, stopped in another order (4.0, 2.8, 3.4 s long): each start and
        // stop falls inside the others' recordings.
        var recordings: [Recording] = []
        for (i, duration) in [4.0, 2.8, 3.4].enumerated() {
            let url = dir.url.appendingPathComponent("at-once-\(i).mp4")
            let events = dir.url.appendingPathComponent("at-once-\(i).jsonl")
            _ = FileManager.default.createFile(atPath: events.path, contents: nil)
            let process = Process()
            process.executableURL = ReelBinary.url
            process.arguments = ["record", "--test-pattern", "--tone", "--size", "320x240", "--preset", "ultrafast",
                                 "--duration", String(duration), "--json", "-o", url.path]
            process.standardOutput = try FileHandle(forWritingTo: events)
            process.standardError = FileHandle.nullDevice
            try process.run()
            recordings.append(Recording(url: url, duration: duration, process: process, events: events))
            usleep(600_000)
        }
        for recording in recordings { recording.process.waitUntilExit() }
        for r in recordings {
            let name = r.url.lastPathComponent
            let lines = ((try? String(contentsOf: r.events, encoding: .utf8)) ?? "").split(separator: "\n")
            let finished = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .first { $0["event"] as? String == "finished" } ?? [:]
            #expect(r.process.terminationStatus == 0, "\(name): \(lines.suffix(3))")
            #expect(finished["complete"] as? Bool == true, "\(name): \(finished)")
            let frames = (finished["frames"] as? NSNumber)?.intValue ?? -1
            let dropped = (finished["dropped"] as? NSNumber)?.intValue ?? -1
            #expect(Recovery.isFinished(r.url), "\(name) is not finalised")

            // The picture: the summary's frames, in order, none twice; frames missing are the drops.
            let counters = try MediaProbe.decodeLuma(r.url, width: 320, height: 240).map(\.counter)
            #expect(counters.allSatisfy { $0 != nil }, "\(name): every frame's counter reads")
            let read = counters.compactMap { $0 }
            #expect(read.count == frames, "\(name): \(read.count) frames in the file, \(frames) in its summary")
            #expect(zip(read, read.dropFirst()).allSatisfy { $1 > $0 }, "\(name): frames in order, none twice: \(read)")
            let expected = Int(r.duration * 30)
            #expect(abs(expected - read.count - dropped) <= 2, "\(name): \(expected - read.count) frames missing, \(dropped) reported dropped")

            // The sound: as long as the recording, no 50 ms without the tone, beeps a second apart.
            let (silent, seconds) = try SlowDiskTests.silentStretches(r.url)
            #expect(abs(seconds - r.duration) < 0.1, "\(name): audio lasts \(seconds) s of \(r.duration) s")
            #expect(silent.isEmpty, "\(name): silent 50 ms stretches at \(silent) s")
            let onsets = MediaProbe.beepOnsets(try MediaProbe.decodeAudio(r.url))
            #expect(onsets.count >= Int(r.duration) - 1, "\(name): beeps at \(onsets)")
            #expect(zip(onsets, onsets.dropFirst()).allSatisfy { abs($1 - $0 - 1) < 0.03 }, "\(name): beeps a second apart: \(onsets)")
        }
    }
}
