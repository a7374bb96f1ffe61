import Foundation
import Testing
import Reel
import ReelTestSupport

/// Sound-only files (`.m4a`, `.opus`, `.ogg`, `.flac`, `.wav`) recorded from the test tone:
/// the right codec, length and sample count, clean decoding, the tone's frequency; pauses into
/// clips merged at the end; a recording killed with SIGKILL made whole by `reel recover`; and
/// the refusals (a video source, a live output, an existing file).
@Suite(.serialized, .tags(.realTime)) struct AudioFileTests {
    /// Each format: its extension, the codec ffprobe names, the container ffprobe names, and
    /// the samples of one codec frame (how far the decoded length may be off).
    struct Format: Sendable, CustomTestStringConvertible {
        var ext: String
        var codec: String
        var container: String
        var frame: Int
        var testDescription: String { ".\(ext)" }
    }

    static let formats: [Format] = [
        Format(ext: "m4a", codec: "aac", container: "mp4", frame: 1024),
        Format(ext: "opus", codec: "opus", container: "ogg", frame: 960),
        Format(ext: "ogg", codec: "opus", container: "ogg", frame: 960),
        Format(ext: "flac", codec: "flac", container: "flac", frame: 4608),
        Format(ext: "wav", codec: "pcm_s16le", container: "wav", frame: 1),
    ]

    /// The formats a kill leaves something different in (`.opus` is `.ogg` by another name).
    static let killedFormats = formats.filter { $0.ext != "opus" }

    @Test(arguments: formats)
    func theToneIsRecordedExactly(format: Format) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("tone.\(format.ext)")
        let r = try ReelBinary.run(["record", "--tone", "--faster-than-real-time", "--duration", "3", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let probe = try MediaProbe.probe(url)
        #expect(probe.formatName.contains(format.container), "\(probe.formatName)")
        #expect(probe.videoStreams.isEmpty)
        let audio = try #require(probe.audioStreams.first)
        #expect(audio.codec == format.codec)
        #expect(audio.sampleRate == 48_000)
        #expect(abs(probe.duration - 3) <= Double(format.frame) / 48_000 + 0.001, "duration \(probe.duration)")
        try expectCleanDecode(url)
        let samples = try MediaProbe.decodeAudio(url)
        #expect(abs(samples.count - 144_000) <= format.frame, "\(samples.count) samples")
        try expectTone(samples)
    }

    /// Faster than real time with an encoder slower than the sources (lossless, a noise
    /// filter), stopped early with SIGTERM: the file's pictures and sound end together and
    /// the summary's length is theirs. The tone ran ahead while the pictures waited for the
    /// encoder: 1.23 s of pictures and 2.68 s of sound, "2.68 s … 37 frames, 0 dropped".
    @Test func fasterThanRealTimeKeepsSoundWithThePictures() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("slow.mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--tone", "--size", "640x360", "--faster-than-real-time", "--crf", "0",
                             "--filter", "noise=alls=100:allf=t", "--duration", "600", "--json", "-o", url.path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .seconds(4))
        process.terminate()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let probe = try MediaProbe.probe(url)
        let video = try #require(probe.videoStreams.first), audio = try #require(probe.audioStreams.first)
        let frames = try #require(video.frameCount), sound = try #require(audio.duration)
        let pictures = Double(frames) / 30
        #expect(pictures > 0.5, "\(frames) frames")
        #expect(abs(sound - pictures) < 0.1, "sound \(sound) s, pictures \(pictures) s")
        let finished = try #require(output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .last { $0["event"] as? String == "finished" })
        let seconds = try #require(finished["duration"] as? Double, "\(finished)")
        #expect(abs(seconds - pictures) < 0.1, "the summary says \(seconds) s, the pictures last \(pictures) s")
    }

    /// A real source (the test PulseAudio server's microphone, fed a 440 Hz tone) into each
    /// format, as a user records a talk.
    @Test(arguments: formats)
    func theMicrophoneIsRecorded(format: Format) throws {
        let pulse = try PulseServer()
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("talk.\(format.ext)")
        let feed = try pulse.feedMicrophone(frequency: 440, seconds: 5)
        defer { feed.stop() }
        let r = try ReelBinary.run(["record", "--mic", "--duration", "1.5", "-o", url.path], environment: pulse.environment)
        #expect(r.status == 0, "\(r.stderr)")
        let probe = try MediaProbe.probe(url)
        #expect(probe.audioStreams.first?.codec == format.codec)
        #expect(abs(probe.duration - 1.5) <= Double(format.frame) / 48_000 + 0.05, "duration \(probe.duration)")
        try expectCleanDecode(url)
        let samples = try MediaProbe.decodeAudio(url)
        let power = ToneAnalysis.power(of: Array(samples.suffix(24_000)), sampleRate: 48_000, frequency: 440)
        #expect(power > 0.01, "the file ends with the microphone's tone, not silence (power \(power))")
    }

    /// The limits hold as for video files: the finished file stays within `--max-size`, and its
    /// header says what it holds (a FLAC stopped by the limit said 0 samples: its final
    /// STREAMINFO comes with the encoder's last packet, which the limit kept out).
    @Test(arguments: formats)
    func theLimitsHold(format: Format) throws {
        let dir = try TemporaryDirectory()
        let sized = dir.url.appendingPathComponent("sized.\(format.ext)")
        let r = try ReelBinary.run(["record", "--tone", "--faster-than-real-time", "--duration", "30", "--max-size", "200k", "-o", sized.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect((r.output + r.stderr).contains("stopped at the maximum file size"), "\(r.output)\(r.stderr)")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: sized.path)[.size] as? NSNumber).intValue
        #expect(size <= 200_000 && size > 150_000, "\(size) bytes")
        try expectCleanDecode(sized)
        let probe = try MediaProbe.probe(sized)
        let seconds = Double(try MediaProbe.decodeAudio(sized).count) / 48_000
        #expect(seconds > 0.9 && abs(probe.duration - seconds) <= Double(format.frame) / 48_000 + 0.01, "\(probe.duration) s stated, \(seconds) s decoded")

        let timed = dir.url.appendingPathComponent("timed.\(format.ext)")
        let t = try ReelBinary.run(["record", "--tone", "--faster-than-real-time", "--duration", "30", "--max-duration", "2", "-o", timed.path])
        #expect(t.status == 0, "\(t.stderr)")
        #expect(abs(try MediaProbe.probe(timed).duration - 2) <= Double(format.frame) / 48_000 + 0.001)
    }

    @Test(arguments: formats)
    func pausesBecomeClipsMergedIntoOneFile(format: Format) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("talk.\(format.ext)")
        let run = try await Recording.start(["--tone", "--pause-mode", "clips", "-o", url.path], in: dir)
        try await Task.sleep(for: .seconds(1.5))
        kill(run.process.processIdentifier, SIGUSR1)  // pause
        try await Task.sleep(for: .seconds(1))
        kill(run.process.processIdentifier, SIGUSR1)  // resume
        try await Task.sleep(for: .seconds(1.5))
        kill(run.process.processIdentifier, SIGINT)
        let finished = try run.finish()
        #expect(finished.status == 0, "\(finished.stderr)")
        let probe = try MediaProbe.probe(url)
        #expect(probe.audioStreams.first?.codec == format.codec)
        // About three seconds of sound: the paused second is not in it.
        #expect(probe.duration > 2.5 && probe.duration < 3.6, "duration \(probe.duration)")
        // The summary counts the whole file, not its last clip.
        let reported = try #require(finished.finishedDuration, "\(finished.events)")
        #expect(abs(reported - probe.duration) < 0.1, "reported \(reported) s, the file holds \(probe.duration) s")
        try expectCleanDecode(url)
        try expectTone(try MediaProbe.decodeAudio(url))
        // Merged and checked: the clips are gone.
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("talk.clips").path))
        // The recording says it started before it says its first clip did (s6 N10).
        let names = finished.events.split(separator: "\n")
            .compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["event"] as? String }
        let started = try #require(names.firstIndex(of: "started"), "\(names)")
        #expect(names.firstIndex(of: "clipStarted").map { started < $0 } == true, "\(names.prefix(6))")
    }

    @Test(arguments: killedFormats)
    func aKilledRecordingIsRecoveredWithAllButItsLastMoment(format: Format) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("killed.\(format.ext)")
        let run = try await Recording.start(["--tone", "-o", url.path], in: dir)
        try await Task.sleep(for: .seconds(3))
        kill(run.process.processIdentifier, SIGKILL)
        let recordedAtKill = Date().timeIntervalSince(run.started)
        _ = try run.finish()

        #expect(Recovery.isCutOff(url), "a killed .\(format.ext) is told from a finished one")
        let recovered = try ReelBinary.run(["recover", url.path])
        #expect(recovered.status == 0, "\(recovered.stderr)")
        #expect(!Recovery.isCutOff(url))
        #expect(Recovery.isFinished(url))
        try expectCleanDecode(url)
        let probe = try MediaProbe.probe(url)
        let samples = try MediaProbe.decodeAudio(url)
        let seconds = Double(samples.count) / 48_000
        // What a kill loses: the encoder's and the container's last unwritten part (an Ogg page,
        // an MP4 fragment: half a second), and a loaded machine's lag.
        #expect(seconds >= recordedAtKill - 1.0, "killed after \(recordedAtKill) s, \(seconds) s recovered")
        #expect(seconds <= recordedAtKill + 0.3, "killed after \(recordedAtKill) s, \(seconds) s recovered")
        #expect(abs(probe.duration - seconds) <= Double(format.frame) / 48_000 + 0.01, "\(probe.duration) s stated, \(seconds) s decoded")
        try expectTone(samples)
        print("loss at kill -9, .\(format.ext): \(String(format: "%.2f", recordedAtKill - seconds)) s")
        // A second recovery finds nothing to do.
        let again = try ReelBinary.run(["recover", url.path])
        #expect(again.status == 0)
        #expect(again.stderr.contains("is complete; nothing to do"), "\(again.stderr)")
    }

    /// A clip recording killed mid-clip: `reel recover NAME.clips` mends the cut-off clip, merges
    /// the clips into the file they were for, checks its seconds of sound and removes them.
    @Test(arguments: killedFormats)
    func aKilledClipRecordingIsMergedByRecover(format: Format) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("talk.\(format.ext)")
        let folder = dir.url.appendingPathComponent("talk.clips")
        let run = try await Recording.start(["--tone", "--pause-mode", "clips", "-o", url.path], in: dir)
        try await Task.sleep(for: .seconds(1.5))
        kill(run.process.processIdentifier, SIGUSR1)
        try await Task.sleep(for: .seconds(0.5))
        kill(run.process.processIdentifier, SIGUSR1)
        try await Task.sleep(for: .seconds(2))
        kill(run.process.processIdentifier, SIGKILL)
        _ = try run.finish()
        #expect(!FileManager.default.fileExists(atPath: url.path))
        let r = try ReelBinary.run(["recover", folder.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.output.contains("of sound"), "\(r.output)")
        try expectCleanDecode(url)
        let seconds = Double(try MediaProbe.decodeAudio(url).count) / 48_000
        // The first clip whole (about 1.5 s) and most of the second (2 s, less what the kill took).
        #expect(seconds > 2.3 && seconds < 3.7, "\(seconds) s")
        #expect(!FileManager.default.fileExists(atPath: folder.path), "the clips go once the file holds their sound")
    }

    /// A file torn at any byte is cut to its last whole frame (page) and made whole; into
    /// another file (`-o`) the original is only read. A failure names the user's file, never
    /// the hidden copy.
    @Test(arguments: killedFormats.filter { $0.ext != "m4a" })
    func aTornFileIsCutToItsLastWholeFrame(format: Format) throws {
        let dir = try TemporaryDirectory()
        let whole = dir.url.appendingPathComponent("whole.\(format.ext)")
        let r = try ReelBinary.run(["record", "--tone", "--faster-than-real-time", "--duration", "4", "-o", whole.path])
        #expect(r.status == 0, "\(r.stderr)")
        let data = try Data(contentsOf: whole)
        for fraction in [0.31, 0.5, 0.77] {
            let torn = dir.url.appendingPathComponent("torn-\(fraction).\(format.ext)")
            let cut = Int(Double(data.count) * fraction) + 7
            try data.prefix(cut).write(to: torn)
            // (A FLAC whose STREAMINFO counts its samples was stopped cleanly: only a copy cut
            // short has fewer; it is told cut off without a walk through every frame only by a
            // count of 0, which is what a kill leaves. `reel recover` still mends it.)
            #expect(Recovery.isCutOff(torn) == (format.ext != "flac"))
            let copy = dir.url.appendingPathComponent("copy-\(fraction).\(format.ext)")
            let copied = try ReelBinary.run(["recover", torn.path, "-o", copy.path])
            #expect(copied.status == 0, "\(copied.stderr)")
            #expect(try Data(contentsOf: torn).count == cut, "-o only reads the recording")
            let inPlace = try ReelBinary.run(["recover", torn.path])
            #expect(inPlace.status == 0, "\(inPlace.stderr)")
            for url in [torn, copy] {
                try expectCleanDecode(url)
                let seconds = Double(try MediaProbe.decodeAudio(url).count) / 48_000
                // What a torn frame or page holds at most, and no more than was there.
                #expect(seconds > 4 * fraction - 0.6 && seconds < 4 * fraction + 0.3, "\(url.lastPathComponent): \(seconds) s")
            }
            // Into an existing file, refused: the error names that file.
            let taken = try ReelBinary.run(["recover", torn.path, "-o", copy.path])
            #expect(taken.status != 0)
            #expect(taken.stderr.contains(copy.path), "\(taken.stderr)")
            #expect(!taken.stderr.contains(".recovering"), "\(taken.stderr)")
        }
        // A recovered WAV stays a WAV (FLAC a FLAC, Ogg an Ogg): another kind is refused.
        let torn = dir.url.appendingPathComponent("torn-0.5.\(format.ext)")
        let other = try ReelBinary.run(["recover", torn.path, "-o", dir.url.appendingPathComponent("other.mkv").path])
        #expect(other.status != 0)
        #expect(other.stderr.contains("stays"), "\(other.stderr)")
    }

    /// A killed `.m4a` is recovered into what can hold its AAC as it is (an MP4, an MKV);
    /// a `.wav`, `.flac` or `.opus` cannot, and is refused naming the user's file kind, not a
    /// hidden copy, and with nothing written.
    @Test func aKilledM4AIsRecoveredOnlyIntoWhatHoldsAAC() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.m4a")
        let run = try await Recording.start(["--tone", "-o", url.path], in: dir)
        try await Task.sleep(for: .seconds(2.5))
        kill(run.process.processIdentifier, SIGKILL)
        _ = try run.finish()
        #expect(Recovery.isCutOff(url))
        let before = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted()
        for ext in ["wav", "flac", "opus"] {
            let out = dir.url.appendingPathComponent("out.\(ext)")
            let r = try ReelBinary.run(["recover", url.path, "-o", out.path])
            #expect(r.status != 0 && r.stderr.contains("a .\(ext) file cannot hold this recording's AAC audio"), "\(r.stderr)")
            #expect(!r.stderr.contains(".recovering"), "\(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out.path))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == before, "nothing written")
        for ext in ["mkv", "mp4"] {
            let out = dir.url.appendingPathComponent("out.\(ext)")
            let r = try ReelBinary.run(["recover", url.path, "-o", out.path])
            #expect(r.status == 0, "\(r.stderr)")
            try expectCleanDecode(out)
            try expectTone(try MediaProbe.decodeAudio(out))
        }
        #expect(Recovery.isCutOff(url), "-o only reads the recording")
    }

    @Test func soundOnlyFilesRefuseWhatTheyCannotHold() throws {
        let dir = try TemporaryDirectory()
        let existing = dir.url.appendingPathComponent("talk.m4a")
        try Data("keep me".utf8).write(to: existing)
        let over = try ReelBinary.run(["record", "--tone", "--faster-than-real-time", "--duration", "1", "-o", existing.path])
        #expect(over.status != 0)
        #expect(over.stderr.contains("already exists"), "\(over.stderr)")
        #expect(try Data(contentsOf: existing) == Data("keep me".utf8))
        let replaced = try ReelBinary.run(["record", "--tone", "--faster-than-real-time", "--duration", "1", "--overwrite", "-o", existing.path])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try MediaProbe.probe(existing).audioStreams.first?.codec == "aac")

        let video = try ReelBinary.run(["record", "--test-pattern", "--tone", "-o", dir.url.appendingPathComponent("v.flac").path])
        #expect(video.status == 2)
        #expect(video.stderr.contains("hold sound only"), "\(video.stderr)")
        for live in [["--replay", "30"], ["--stream", "rtmp://127.0.0.1/app/key"], ["--hls", dir.url.path]] {
            let r = try ReelBinary.run(["record", "--tone"] + live + ["-o", dir.url.appendingPathComponent("s.ogg").path])
            #expect(r.status == 2, "\(live)")
            #expect(r.stderr.contains("video files only"), "\(live): \(r.stderr)")
        }
        let codec = try ReelBinary.run(["record", "--tone", "--audio-codec", "aac", "-o", dir.url.appendingPathComponent("a.flac").path])
        #expect(codec.status == 2)
        #expect(codec.stderr.contains("use --audio-codec flac"), "\(codec.stderr)")
        let lossless = try ReelBinary.run(["record", "--tone", "--audio-bitrate", "128k", "-o", dir.url.appendingPathComponent("a.wav").path])
        #expect(lossless.status == 2)
        #expect(lossless.stderr.contains("does nothing"), "\(lossless.stderr)")
        for ext in ["mp4", "mkv", "m4a", "opus", "ogg", "flac", "wav"] {
            #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("s.\(ext)").path))
        }
    }

    /// A stranger's finding (s2 F4): two sources into a WAV or FLAC failed with FFmpeg's
    /// "cannot write the header … Invalid argument" (exit 1). A usage error naming --mix-audio.
    @Test func twoSourcesIntoAFileOfOneTrackAreAUsageError() throws {
        let dir = try TemporaryDirectory()
        for ext in ["wav", "flac"] {
            let url = dir.url.appendingPathComponent("two.\(ext)")
            let r = try ReelBinary.run(["record", "--tone", "--mic", "--duration", "1", "-o", url.path])
            #expect(r.status == 2, ".\(ext): \(r.stderr)")
            #expect(r.stderr.contains("one audio track") && r.stderr.contains("--mix-audio"), ".\(ext): \(r.stderr)")
            #expect(!FileManager.default.fileExists(atPath: url.path))
        }
    }

    /// A stranger's finding (s2 F6): a sound-only recording stopped by --duration said
    /// `"ending":"requested"` and no "stopped at the maximum duration", unlike a video one.
    @Test func aTimedSoundRecordingSaysItStoppedAtTheMaximumDuration() throws {
        let dir = try TemporaryDirectory()
        let json = try ReelBinary.run(["record", "--tone", "--duration", "1", "--json", "-o", dir.url.appendingPathComponent("d1.wav").path])
        #expect(json.status == 0, "\(json.stderr)")
        let finished = try #require(json.output.split(separator: "\n").first { $0.contains("\"finished\"") }, "\(json.output)")
        let object = try JSONSerialization.jsonObject(with: Data(finished.utf8)) as? [String: Any]
        #expect(object?["ending"] as? String == "maxDuration", "\(finished)")
        let text = try ReelBinary.run(["record", "--tone", "--duration", "1", "-o", dir.url.appendingPathComponent("d2.flac").path])
        #expect(text.status == 0, "\(text.stderr)")
        #expect((text.output + text.stderr).contains("stopped at the maximum duration"), "\(text.output)\(text.stderr)")
    }

    /// The check that lets clips be deleted after a merge counts seconds of sound when there is
    /// no video: a merged file short of the clips' sound does not pass.
    @Test func theMergeCheckCountsSecondsOfSound() throws {
        let dir = try TemporaryDirectory()
        let long = dir.url.appendingPathComponent("long.flac")
        let short = dir.url.appendingPathComponent("short.flac")
        for (url, seconds) in [(long, "3"), (short, "1")] {
            let r = try ReelBinary.run(["record", "--tone", "--faster-than-real-time", "--duration", seconds, "-o", url.path])
            #expect(r.status == 0, "\(r.stderr)")
        }
        let clips = try PacketCount.count(long)
        let merged = try PacketCount.count(short)
        #expect(clips.videoPackets == 0 && merged.videoPackets == 0, "no frames to tell them apart")
        #expect(abs(clips.audioSeconds - 3) < 0.1, "\(clips.audioSeconds)")
        #expect(abs(merged.audioSeconds - 1) < 0.1, "\(merged.audioSeconds)")
        #expect(clips.holdsAudio(of: 3, clips: 2))
        #expect(!merged.holdsAudio(of: 3, clips: 2), "a merge that lost two seconds of sound must keep the clips")
    }

    // MARK: Helpers

    struct NotStarted: Error, CustomStringConvertible {
        var description: String
    }

    /// A `reel record` running with `--json`, from its "started" event.
    struct Recording {
        var process: Process
        var events: URL
        var errors: Pipe
        var started: Date

        static func start(_ arguments: [String], in dir: TemporaryDirectory) async throws -> Recording {
            let events = dir.url.appendingPathComponent("events-\(UUID().uuidString).jsonl")
            _ = FileManager.default.createFile(atPath: events.path, contents: nil)
            let process = Process()
            process.executableURL = ReelBinary.url
            process.arguments = ["record", "--json"] + arguments
            process.standardOutput = try FileHandle(forWritingTo: events)
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if let text = try? String(contentsOf: events, encoding: .utf8), text.contains("\"started\"") {
                    return Recording(process: process, events: events, errors: errors, started: Date())
                }
                try await Task.sleep(for: .milliseconds(5))
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw NotStarted(description: "reel record \(arguments.joined(separator: " ")) did not start within 10 s")
        }

        func finish() throws -> (status: Int32, stderr: String, events: String, finishedDuration: Double?) {
            process.waitUntilExit()
            let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let text = (try? String(contentsOf: events, encoding: .utf8)) ?? ""
            var duration: Double?
            for line in text.split(separator: "\n") where line.contains("\"finished\"") {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                duration = (object?["duration"] as? NSNumber)?.doubleValue
            }
            return (process.terminationStatus, stderr, text, duration)
        }
    }

    private func expectCleanDecode(_ url: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let r = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-f", "null", "-"])
        #expect(r.status == 0 && r.stderr.isEmpty, "\(url.lastPathComponent) decodes with errors: \(r.stderr)", sourceLocation: sourceLocation)
    }

    /// The test tone is a quiet 440 Hz sine (with 1 kHz beeps): 440 Hz is there, well above
    /// its neighbours.
    private func expectTone(_ samples: [Float], sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(samples.count > 24_000, sourceLocation: sourceLocation)
        let tone = ToneAnalysis.power(of: samples, sampleRate: 48_000, frequency: 440)
        let other = max(ToneAnalysis.power(of: samples, sampleRate: 48_000, frequency: 330),
                        ToneAnalysis.power(of: samples, sampleRate: 48_000, frequency: 550))
        #expect(tone > 0.00001 && tone > 20 * other, "440 Hz power \(tone), neighbours \(other)", sourceLocation: sourceLocation)
    }
}
