import Foundation
import Testing
import Reel
import ReelTestSupport

/// `reel record --app-audio=APP` and `--app-audio-except=APP` on a real PulseAudio server: two
/// players of different tones play at once, one named A; only the chosen one is recorded, a
/// player started while recording is followed, and the server's routing afterwards — also
/// after a SIGKILL of reel — is exactly what it was before.
@Suite(.serialized, .tags(.realTime)) struct ApplicationAudioTests {
    /// A test PulseAudio server with a second sink, `other`, and a runtime folder of its own
    /// for reel's state files.
    final class Setup {
        let pulse: PulseServer
        let dir: TemporaryDirectory
        let environment: [String: String]

        init() throws {
            pulse = try PulseServer()
            dir = try TemporaryDirectory()
            let runtime = dir.url.appendingPathComponent("runtime")
            try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true)
            environment = pulse.environment.merging(["XDG_RUNTIME_DIR": runtime.path]) { $1 }
            let loaded = try pactl(["load-module", "module-null-sink", "sink_name=other", "rate=48000", "channels=2"])
            #expect(Int(loaded.trimmingCharacters(in: .whitespacesAndNewlines)) != nil, "\(loaded)")
            // As the server's own sink: silence at a low latency keeps it rendering in small
            // blocks, as a sound card's sink does (attached while suspended, see PulseServer).
            _ = try pactl(["suspend-sink", "other", "1"])
            keeper = try pulse.playTone(frequency: 100, seconds: 120, amplitude: 0, applicationName: "keeper", sink: "other")
            usleep(200_000)
            _ = try pactl(["suspend-sink", "other", "0"])
        }

        deinit { keeper?.stop() }

        private var keeper: ToneFeed?

        var stateFolder: URL { URL(fileURLWithPath: environment["XDG_RUNTIME_DIR"]!).appendingPathComponent("reel") }

        func pactl(_ arguments: [String]) throws -> String {
            let r = try Subprocess.run(["pactl"] + arguments, environment: environment)
            guard r.status == 0 else { throw ReelError(.ioFailure, "pactl \(arguments.joined(separator: " ")) failed: \(r.stderr)") }
            return r.output
        }

        /// The server's routing: each stream with its sink and client, the modules and the sinks
        /// (names and indexes, without their changing states).
        func routing() throws -> String {
            let streams = try pactl(["list", "short", "sink-inputs"]).split(separator: "\n")
                .map { $0.split(separator: "\t").prefix(3).joined(separator: " ") }
            let sinks = try pactl(["list", "short", "sinks"]).split(separator: "\n")
                .map { $0.split(separator: "\t").prefix(2).joined(separator: " ") }
            return (streams + ["--"] + sinks + ["--", try pactl(["list", "short", "modules"])]).joined(separator: "\n")
        }

        /// The sink each stream of application `name` plays into.
        func sinks(of name: String) throws -> [String] {
            let sinkNames = Dictionary(uniqueKeysWithValues: try pactl(["list", "short", "sinks"]).split(separator: "\n").map {
                let fields = $0.split(separator: "\t")
                return (String(fields[0]), String(fields[1]))
            })
            var found: [String] = []
            var sink: String?
            for line in try pactl(["list", "sink-inputs"]).split(separator: "\n") {
                let text = line.trimmingCharacters(in: .whitespaces)
                if text.hasPrefix("Sink: ") { sink = sinkNames[String(text.dropFirst(6))] }
                if text == "application.name = \"\(name)\"" { found.append(sink ?? "?") }
            }
            return found
        }

        /// The runs started, by their process id.
        private var runs: [Int32: RecordRun] = [:]

        /// What the recording `process` printed with `--json` so far.
        func events(_ process: Process) -> String { runs[process.processIdentifier]?.json ?? "" }

        /// Starts `reel record` with `arguments` and waits until it has started recording.
        func startRecording(_ arguments: [String], output: URL) throws -> (Process, Pipe) {
            let run = try RecordRun(arguments, output: output, events: dir.url.appendingPathComponent("events-\(UUID().uuidString).jsonl"),
                                    environment: environment)
            runs[run.process.processIdentifier] = run
            return (run.process, run.errors)
        }
    }

    /// The powers of 440, 1000 and 1800 Hz in each quarter second, for a failure to show.
    static func profile(_ samples: [Float]) -> String {
        stride(from: 0.0, to: Double(samples.count) / 48_000, by: 0.25).map { start in
            let p = powers(samples, from: start, to: start + 0.25, [440, 1000, 1800])
            return String(format: "%.2f: %.3f %.3f %.3f", start, p[440]!, p[1000]!, p[1800]!)
        }.joined(separator: "\n")
    }

    /// The quarter seconds from `start` to `end` (whole ones) whose power at `frequency` is
    /// below what a tone has when at least a seventh of the quarter holds it: the quarters
    /// without the tone. (A tone a player plays live, recorded through loopbacks on a loaded
    /// 2-core machine, has dropouts of tens of milliseconds, up to 200 ms when a recording
    /// starts or stops beside it; silence or another tone measures a thousandth of this.)
    static func quartersWithout(_ frequency: Double, in samples: [Float], from start: Double, to end: Double) -> [Double] {
        stride(from: start, through: end - 0.25, by: 0.25).filter { at in
            powers(samples, from: at, to: at + 0.25, [frequency])[frequency]! < 0.003
        }
    }

    /// The power of each frequency from `start` to `end` seconds of `samples` (played live by
    /// another process: see ``ToneAnalysis/meanPower(of:sampleRate:frequency:window:)``).
    static func powers(_ samples: [Float], from start: Double, to end: Double, _ frequencies: [Double]) -> [Double: Double] {
        let slice = Array(samples[min(samples.count, Int(start * 48_000))..<min(samples.count, Int(end * 48_000))])
        return Dictionary(uniqueKeysWithValues: frequencies.map { ($0, ToneAnalysis.meanPower(of: slice, sampleRate: 48_000, frequency: $0)) })
    }

    /// Another program records application A's stream alone (`parec --monitor-stream`, as a
    /// per-application recorder does): reel's move of the stream into its relay ends that
    /// recording (PulseAudio's doing), and reel says so, naming the record stream: an
    /// `anotherRecordingEnded` event and `endedRecordings` in `finished`, the recording itself
    /// complete (exit 0). It said nothing; the other program's file just stopped growing (s5
    /// F14); then only a line on stderr, no event.
    @Test func aRecordingOfTheStreamAloneThatTheMoveEndsIsSaid() throws {
        let setup = try Setup()
        let a = try setup.pulse.playTone(frequency: 440, seconds: 20, amplitude: 0.4, applicationName: "A")
        defer { a.stop() }
        usleep(300_000)
        var stream: String?
        var index: String?
        for line in try setup.pactl(["list", "sink-inputs"]).split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("Sink Input #") { index = String(text.dropFirst("Sink Input #".count)) }
            if text == "application.name = \"A\"" { stream = index }
        }
        let streams = try setup.pactl(["list", "short", "sink-inputs"])
        let id = try #require(stream, "A's stream: \(streams)")
        let parec = Process()
        parec.executableURL = URL(fileURLWithPath: "/usr/bin/parec")
        parec.arguments = ["--monitor-stream=\(id)", "--raw", "--format=s16le", "--rate=48000", "--channels=2"]
        parec.environment = ProcessInfo.processInfo.environment.merging(setup.environment) { $1 }
        parec.standardOutput = FileHandle.nullDevice
        parec.standardError = FileHandle.nullDevice
        try parec.run()
        defer { if parec.isRunning { parec.terminate() } }
        usleep(500_000)
        try #require(parec.isRunning)
        let recordings = try setup.pactl(["list", "short", "source-outputs"])
        let recording = try #require(recordings.split(separator: "\n").first.flatMap { $0.split(separator: "\t").first }.map(String.init),
                                     "\(recordings)")
        let url = setup.dir.url.appendingPathComponent("a.m4a")
        let (process, errors) = try setup.startRecording(["--app-audio=A", "--duration", "2"], output: url)
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(stderr)")
        let events = setup.events(process).split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let ended = events.filter { $0["event"] as? String == "anotherRecordingEnded" }
        let said = ended.first?["message"] as? String ?? ""
        #expect(ended.count == 1 && said.contains("PulseAudio ended the recording of that stream alone by ")
                && said.contains("(record stream \(recording))"), "\(events)")
        let finished = try #require(events.first { $0["event"] as? String == "finished" }, "\(events)")
        #expect(finished["complete"] as? Bool == true, "\(finished)")
        let listed = finished["endedRecordings"] as? [String] ?? []
        #expect(listed.count == 1 && listed[0].contains("(record stream \(recording))"), "\(finished)")
    }

    @Test func onlyTheNamedApplicationIsRecordedAndOneStartedLaterIsFollowed() throws {
        let setup = try Setup()
        let a = try setup.pulse.playTone(frequency: 440, seconds: 20, amplitude: 0.4, applicationName: "A")
        let b = try setup.pulse.playTone(frequency: 1000, seconds: 20, amplitude: 0.4, applicationName: "B")
        defer { a.stop(); b.stop() }
        usleep(300_000)
        let before = try setup.routing()
        let url = setup.dir.url.appendingPathComponent("a.m4a")
        let (process, errors) = try setup.startRecording(["--app-audio=a", "--duration", "4"], output: url)
        #expect(process.isRunning)
        usleep(1_200_000)
        // Another stream of A, on the other sink: followed, through a relay to that sink.
        let third = try setup.pulse.playTone(frequency: 1800, seconds: 1.6, amplitude: 0.4, applicationName: "A", sink: "other")
        usleep(500_000)
        let aSinks = try setup.sinks(of: "A")
        #expect(aSinks.count == 2 && aSinks.allSatisfy { $0.hasPrefix("reel-app-\(process.processIdentifier)-") }, "\(aSinks)")
        #expect(try setup.sinks(of: "B") == ["apps"])
        third.wait()
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(stderr)")
        #expect(try setup.routing() == before)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: setup.stateFolder.path)) ?? [] == [])

        let audio = try MediaProbe.decodeAudio(url)
        let early = Self.powers(audio, from: 0.3, to: 1.1, [440, 1000, 1800])
        #expect(early[440]! > 0.02, "\(early)")
        #expect(early[1000]! < early[440]! / 1000, "\(early)")
        #expect(early[1800]! < early[440]! / 1000, "\(early)")
        let both = Self.powers(audio, from: 1.9, to: 2.5, [440, 1000, 1800])
        #expect(both[1800]! > 0.02, "\(both)\n\(Self.profile(audio))\n\(stderr)")
        #expect(both[440]! > 0.02, "\(both)")
        #expect(both[1000]! < both[440]! / 1000, "\(both)")
    }

    @Test func exceptRecordsEveryoneButTheNamedApplication() throws {
        let setup = try Setup()
        let a = try setup.pulse.playTone(frequency: 440, seconds: 20, amplitude: 0.4, applicationName: "A")
        let b = try setup.pulse.playTone(frequency: 1000, seconds: 20, amplitude: 0.4, applicationName: "B")
        defer { a.stop(); b.stop() }
        usleep(300_000)
        let before = try setup.routing()
        let url = setup.dir.url.appendingPathComponent("not-a.m4a")
        let (process, errors) = try setup.startRecording(["--app-audio-except=A", "--duration", "4"], output: url)
        usleep(1_200_000)
        let third = try setup.pulse.playTone(frequency: 1800, seconds: 1.6, amplitude: 0.4, applicationName: "C")
        usleep(500_000)
        #expect(try setup.sinks(of: "A") == ["apps"])
        let cSinks = try setup.sinks(of: "C")
        let routingNow = try setup.routing()
        #expect(!cSinks.isEmpty && cSinks.allSatisfy { $0.hasPrefix("reel-app-") }, "\(cSinks) \(routingNow)")
        third.wait()
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(stderr)")
        #expect(try setup.routing() == before)

        let audio = try MediaProbe.decodeAudio(url)
        let early = Self.powers(audio, from: 0.3, to: 1.1, [440, 1000, 1800])
        #expect(early[1000]! > 0.02, "\(early)")
        #expect(early[440]! < early[1000]! / 1000, "\(early)")
        let later = Self.powers(audio, from: 1.9, to: 2.5, [440, 1000, 1800])
        #expect(later[1800]! > 0.02, "\(later) \(stderr)")
        #expect(later[440]! < later[1000]! / 1000, "\(later)")
    }

    @Test func afterASIGKILLTheGuardPutsTheRoutingBack() throws {
        let setup = try Setup()
        let a = try setup.pulse.playTone(frequency: 440, seconds: 20, amplitude: 0.4, applicationName: "A")
        let b = try setup.pulse.playTone(frequency: 1000, seconds: 20, amplitude: 0.4, applicationName: "B", sink: "other")
        defer { a.stop(); b.stop() }
        usleep(300_000)
        let before = try setup.routing()
        let url = setup.dir.url.appendingPathComponent("killed.m4a")
        let (process, _) = try setup.startRecording(["--app-audio=A", "--app-audio=B"], output: url)
        usleep(500_000)
        let moved = try setup.routing()
        #expect(moved != before)
        #expect(try (setup.sinks(of: "A") + setup.sinks(of: "B")).allSatisfy { $0.hasPrefix("reel-app-\(process.processIdentifier)-") })
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, try setup.routing() != before { usleep(20_000) }
        #expect(try setup.routing() == before)
        #expect(try setup.sinks(of: "B") == ["other"])
        #expect((try? FileManager.default.contentsOfDirectory(atPath: setup.stateFolder.path)) ?? [] == [])
    }

    @Test func aRecordingStoppedBySIGTERMPutsTheRoutingBackAndKeepsItsFile() throws {
        let setup = try Setup()
        let a = try setup.pulse.playTone(frequency: 440, seconds: 20, amplitude: 0.4, applicationName: "A")
        let mic = try setup.pulse.feedMicrophone(frequency: 880, seconds: 20, amplitude: 0.4)
        defer { a.stop(); mic.stop() }
        usleep(300_000)
        let before = try setup.routing()
        let url = setup.dir.url.appendingPathComponent("term.m4a")
        let (process, errors) = try setup.startRecording(["--app-audio=A", "--mic"], output: url)
        usleep(1_000_000)
        #expect(try setup.sinks(of: "A").allSatisfy { $0.hasPrefix("reel-app-") })
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(stderr)")
        #expect(try setup.routing() == before)
        let probe = try MediaProbe.probe(url)
        #expect(probe.audioStreams.count == 2)
        // The microphone's track first, then the application's.
        let microphone = try MediaProbe.decodeAudio(url, track: 0)
        #expect(ToneAnalysis.dominantFrequency(of: Array(microphone.prefix(24_000)), sampleRate: 48_000, candidates: [440, 880]) == 880)
        let application = try MediaProbe.decodeAudio(url, track: 1)
        let powers = Self.powers(application, from: 0.3, to: 0.8, [440, 880])
        #expect(powers[440]! > 0.02 && powers[880]! < powers[440]! / 1000, "\(Self.profile(application))")
    }

    @Test func whenTheGuardDiesTooTheNextRunRestores() throws {
        let setup = try Setup()
        let a = try setup.pulse.playTone(frequency: 440, seconds: 20, amplitude: 0.4, applicationName: "A")
        defer { a.stop() }
        usleep(300_000)
        let before = try setup.routing()
        let (process, _) = try setup.startRecording(["--app-audio=A"], output: setup.dir.url.appendingPathComponent("x.m4a"))
        usleep(500_000)
        #expect(try setup.sinks(of: "A").allSatisfy { $0.hasPrefix("reel-app-") })
        let stateFile = setup.stateFolder.appendingPathComponent("app-audio-\(process.processIdentifier).json")
        let state = try JSONSerialization.jsonObject(with: Data(contentsOf: stateFile)) as? [String: Any]
        let guardPID = try #require(state?["guardPID"] as? Int)
        // The guard first (it would restore at once), then reel.
        kill(Int32(guardPID), SIGKILL)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        usleep(200_000)
        #expect(try setup.routing() != before)
        let doctor = try ReelBinary.run(["doctor"], environment: setup.environment)
        #expect(doctor.output.contains("app-audio-routing"), "\(doctor.output)")
        #expect(doctor.output.contains("restored now: reel process \(process.processIdentifier) died"), "\(doctor.output)")
        #expect(try setup.routing() == before)
        #expect(try setup.sinks(of: "A") == ["apps"])
        #expect(!FileManager.default.fileExists(atPath: stateFile.path))
    }

    /// Kills a recording of `--app-audio=A` and its guard, leaving its routing behind.
    static func killedRecording(_ setup: Setup) throws -> (pid: Int32, stateFile: URL) {
        let (process, _) = try setup.startRecording(["--app-audio=A"], output: setup.dir.url.appendingPathComponent("k-\(UUID().uuidString).m4a"))
        usleep(500_000)
        #expect(try setup.sinks(of: "A").allSatisfy { $0.hasPrefix("reel-app-") })
        let stateFile = setup.stateFolder.appendingPathComponent("app-audio-\(process.processIdentifier).json")
        let state = try JSONSerialization.jsonObject(with: Data(contentsOf: stateFile)) as? [String: Any]
        let guardPID = try #require(state?["guardPID"] as? Int)
        kill(Int32(guardPID), SIGKILL)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        usleep(200_000)
        return (process.processIdentifier, stateFile)
    }

    @Test func doctorWithAnotherServerOrRuntimeFolderRestoresOnTheRecordingsServer() throws {
        let setup = try Setup()
        let a = try setup.pulse.playTone(frequency: 440, seconds: 30, amplitude: 0.4, applicationName: "A")
        defer { a.stop() }
        usleep(300_000)
        let before = try setup.routing()
        // Another PULSE_SERVER, the same runtime folder: the state file's own server is restored.
        let first = try Self.killedRecording(setup)
        #expect(try setup.routing() != before)
        let elsewhere = try PulseServer()
        let doctor = try ReelBinary.run(["doctor"], environment: setup.environment.merging(elsewhere.environment) { $1 })
        #expect(doctor.output.contains("restored now: reel process \(first.pid) died"), "\(doctor.output)")
        #expect(doctor.output.contains("moved 1 stream(s)"), "\(doctor.output)")
        #expect(try setup.routing() == before)
        #expect(!FileManager.default.fileExists(atPath: first.stateFile.path))
        // Another runtime folder (no state file there): found on the server by its sinks' names.
        let second = try Self.killedRecording(setup)
        let otherRuntime = setup.dir.url.appendingPathComponent("other-runtime")
        try FileManager.default.createDirectory(at: otherRuntime, withIntermediateDirectories: true)
        let again = try ReelBinary.run(["doctor"], environment: setup.environment.merging(["XDG_RUNTIME_DIR": otherRuntime.path]) { $1 })
        #expect(again.output.contains("restored now: reel process \(second.pid) ended"), "\(again.output)")
        #expect(again.output.contains("no state file found"), "\(again.output)")
        #expect(try setup.routing() == before)
        #expect(try setup.sinks(of: "A") == ["apps"])
        // Its state file is then found with nothing left to restore, and removed.
        let last = try ReelBinary.run(["doctor"], environment: setup.environment)
        #expect(!FileManager.default.fileExists(atPath: second.stateFile.path), "\(last.output)")
        #expect(try setup.routing() == before)
    }

    @Test func aStreamMovedAwayWhileRecordingAndAnApplicationThatNeverPlayedAreSaid() throws {
        let setup = try Setup()
        let a = try setup.pulse.playTone(frequency: 440, seconds: 20, amplitude: 0.4, applicationName: "A")
        defer { a.stop() }
        usleep(300_000)
        let before = try setup.routing()
        let (process, errors) = try setup.startRecording(["--app-audio=A", "--app-audio=Never", "--duration", "3"],
                                                         output: setup.dir.url.appendingPathComponent("away.m4a"))
        usleep(700_000)
        #expect(try setup.sinks(of: "A").allSatisfy { $0.hasPrefix("reel-app-") })
        // The user moves A back to the speakers by hand.
        let streams = try setup.pactl(["list", "sink-inputs"])
        let blocks = streams.components(separatedBy: "Sink Input #").dropFirst()
        let aIndex = try #require(blocks.first { $0.contains("application.name = \"A\"") }.map { String($0.prefix { $0.isNumber }) })
        _ = try setup.pactl(["move-sink-input", aIndex, "apps"])
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        // Finalised, but not all that was asked for: exit 3, and the events and the end say why.
        #expect(process.terminationStatus == 3, "\(stderr)")
        let events = setup.events(process)
        let lines = events.split(separator: "\n")
        #expect(lines.contains { $0.contains("\"event\":\"sourceIncomplete\"") && $0.contains("the stream of 'A' (\(aIndex)) was moved away from reel's relay to 'apps'") }, "\(events)")
        #expect(lines.contains { $0.contains("\"event\":\"sourceSilent\"") && $0.contains("no application 'Never' has played") }, "\(events)")
        #expect(!events.contains("no application 'A' has played"), "\(events)")
        let finished = try #require(lines.first { $0.contains("\"event\":\"finished\"") })
        #expect(finished.contains("\"complete\":false") && finished.contains("\"kind\":\"incomplete\"") && finished.contains("\"kind\":\"silent\""), "\(finished)")
        #expect(try setup.routing() == before)
    }

    @Test func aNameOfBothASinkAndAPlayingApplicationIsPointedOut() throws {
        let setup = try Setup()
        _ = try setup.pactl(["load-module", "module-null-sink", "sink_name=A", "rate=48000", "channels=2"])
        let a = try setup.pulse.playTone(frequency: 440, seconds: 20, amplitude: 0.4, applicationName: "A")
        defer { a.stop() }
        usleep(300_000)
        let streams = try setup.pactl(["list", "sink-inputs"]).components(separatedBy: "Sink Input #").dropFirst()
        let block = try #require(streams.first { $0.contains("application.name = \"A\"") })
        let pid = try #require(block.components(separatedBy: "application.process.id = \"").dropFirst().first?.prefix { $0.isNumber })
        let r = try ReelBinary.run(["record", "--app-audio=A", "--duration", "1", "-o", setup.dir.url.appendingPathComponent("a.m4a").path],
                                   environment: setup.environment)
        // Nothing plays on the sink A: a sink's monitor of digital silence is a source that
        // recorded nothing (11c3103), said and exit 3.
        #expect(r.status == 3 && r.stderr.contains("digital silence"), "\(r.stderr)")
        #expect(r.stderr.contains("note: 'A' names both a sink and an application playing now; recording the sink 'A'"), "\(r.stderr)")
        #expect(r.stderr.contains("use --app-audio=\(pid)"), "\(r.stderr)")
        // Named by its process id, the application is recorded, with no note.
        let byPID = try ReelBinary.run(["record", "--app-audio=\(pid)", "--duration", "1", "-o", setup.dir.url.appendingPathComponent("b.m4a").path],
                                       environment: setup.environment)
        #expect(byPID.status == 0, "\(byPID.stderr)")
        #expect(!byPID.stderr.contains("names both"), "\(byPID.stderr)")
    }

    @Test func aRecordingWhoseSinkIsUnloadedEndsFinalisedAndPutsTheRoutingBack() throws {
        let setup = try Setup()
        let a = try setup.pulse.playTone(frequency: 440, seconds: 30, amplitude: 0.4, applicationName: "A")
        defer { a.stop() }
        usleep(300_000)
        let before = try setup.routing()
        let url = setup.dir.url.appendingPathComponent("unloaded.m4a")
        let (process, errors) = try setup.startRecording(["--app-audio=A", "--duration", "30"], output: url)
        usleep(1_500_000)
        let module = try #require(try setup.pactl(["list", "short", "modules"]).split(separator: "\n")
            .first { $0.contains("module-null-sink") && $0.contains("sink_name=reel-app-\(process.processIdentifier) ") }
            .map { String($0.split(separator: "\t")[0]) })
        let unloaded = Date()
        _ = try setup.pactl(["unload-module", module])
        let deadline = Date().addingTimeInterval(15)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let took = Date().timeIntervalSince(unloaded)
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        // With --json the loss is an event on stdout.
        let events = try FileManager.default.contentsOfDirectory(at: setup.dir.url, includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent.hasPrefix("events-") }
            .map { try String(contentsOf: $0, encoding: .utf8) }.joined(separator: "\n")
        #expect(took < 10, "\(stderr)")
        #expect(events.contains("app audio of 'A' can no longer be recorded"), "\(events)\n\(stderr)")
        // Said in the user's words: the application's name, never the sink reel made for it.
        #expect(!events.contains("reel-app-") && !stderr.contains("reel-app-"), "\(events)\n\(stderr)")
        #expect(try setup.routing() == before)
        #expect(try setup.sinks(of: "A") == ["apps"])
        // What was recorded before is kept, finalised: about 1.5 s of the tone.
        let audio = try MediaProbe.decodeAudio(url)
        #expect(Double(audio.count) / 48_000 > 0.8, "\(audio.count) samples; \(stderr)")
        #expect(Self.powers(audio, from: 0.3, to: 0.8, [440])[440]! > 0.02, "\(Self.profile(audio))")
    }

    @Test func doctorKeepsAStateFileWhoseServerCannotBeReachedAndSaysSo() throws {
        let setup = try Setup()
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        let dead = child.processIdentifier
        try FileManager.default.createDirectory(at: setup.stateFolder, withIntermediateDirectories: true)
        let file = setup.stateFolder.appendingPathComponent("app-audio-\(dead).json")
        try Data("{\"server\":\"tcp:127.0.0.1:1\",\"recorderPID\":\(dead),\"tag\":\"reel-app-\(dead)\",\"moved\":[]}".utf8).write(to: file)
        let doctor = try ReelBinary.run(["doctor"], environment: setup.environment)
        #expect(doctor.output.contains("not all restored: reel process \(dead) died"), "\(doctor.output)")
        #expect(doctor.output.contains("tcp:127.0.0.1:1 cannot be reached now"), "\(doctor.output)")
        #expect(FileManager.default.fileExists(atPath: file.path))
    }

    @Test func anApplicationAnotherReelRecordsIsRecordedByBoth() throws {
        let setup = try Setup()
        let a = try setup.pulse.playTone(frequency: 440, seconds: 20, amplitude: 0.4, applicationName: "A")
        defer { a.stop() }
        usleep(300_000)
        let before = try setup.routing()
        let firstURL = setup.dir.url.appendingPathComponent("first.m4a"), secondURL = setup.dir.url.appendingPathComponent("second.m4a")
        let (first, _) = try setup.startRecording(["--app-audio=A", "--duration", "4"], output: firstURL)
        usleep(500_000)
        let second = try ReelBinary.run(["record", "--app-audio=A", "--duration", "2", "-o", secondURL.path], environment: setup.environment)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(!second.stderr.contains("already being recorded"), "\(second.stderr)")
        first.waitUntilExit()
        #expect(first.terminationStatus == 0, "\(setup.events(first))")
        #expect(try setup.routing() == before)
        // Both hold the tone in every quarter second they recorded.
        for url in [firstURL, secondURL] {
            let audio = try MediaProbe.decodeAudio(url)
            let missing = Self.quartersWithout(440, in: audio, from: 0.25, to: Double(audio.count) / 48_000 - 0.25)
            #expect(missing.isEmpty, "\(url.lastPathComponent) lacks the tone at \(missing) s\n\(Self.profile(audio))")
        }
    }

    @Test func anApplicationThatIsNotPlayingIsRecordedWhenItStarts() throws {
        let setup = try Setup()
        let url = setup.dir.url.appendingPathComponent("later.m4a")
        let before = try setup.routing()
        let (process, errors) = try setup.startRecording(["--app-audio=Late", "--duration", "3"], output: url)
        usleep(1_000_000)
        let late = try setup.pulse.playTone(frequency: 1000, seconds: 5, amplitude: 0.4, applicationName: "Late")
        defer { late.stop() }
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        // It played while recorded: a complete recording.
        #expect(process.terminationStatus == 0, "\(stderr)")
        #expect(setup.events(process).contains("no application 'Late' has played"), "\(setup.events(process))")
        #expect(setup.events(process).contains("\"event\":\"sourceResumed\""), "\(setup.events(process))")
        #expect(stderr.contains("'Late' started playing"), "\(stderr)")
        let audio = try MediaProbe.decodeAudio(url)
        #expect(Self.powers(audio, from: 0.1, to: 0.8, [1000])[1000]! < 0.0001)
        #expect(Self.powers(audio, from: 1.8, to: 2.8, [1000])[1000]! > 0.02)
        late.stop()
        usleep(200_000)
        #expect(try setup.routing() == before)
    }

    /// The stretches of digital silence of at least a millisecond in `samples` from `start` to
    /// `end` seconds, each as (where, how long) in seconds. A 0.4 tone at 440 Hz is under a few
    /// steps of 16 bits for one sample at most, where it crosses zero.
    static func silences(in samples: [Float], from start: Double, to end: Double) -> [(at: Double, length: Double)] {
        var found: [(Double, Double)] = []
        var run = 0
        let first = Int(start * 48_000), last = min(samples.count, Int(end * 48_000))
        guard first < last else { return [] }
        for i in first..<last {
            if abs(samples[i]) < 0.0005 { run += 1; continue }
            if run >= 48 { found.append((Double(i - run) / 48_000, Double(run) / 48_000)) }
            run = 0
        }
        if run >= 48 { found.append((Double(last - run) / 48_000, Double(run) / 48_000)) }
        return found
    }

    /// Issue 26, N1: the audio server stalls (a busy machine: here the daemon is stopped for
    /// 150 ms, eight times) while an application plays; the application's own stream holds a
    /// second, so what the listener hears has no hole. The routing's loopback, from the relay's
    /// monitor into the recorded sink, held 40 ms: when the recorded sink caught up first it
    /// ran dry, and PulseAudio rendered digital silence into the recording, which it tells no
    /// client, only its log: "Could not peek into queue" (in 3 runs of 3; the files had holes
    /// of 6 to 120 ms, the recordings "complete"). Its 200 ms outlast such a stall: the server
    /// never says it (5 runs of 5). The file is not what is checked: after such stalls a
    /// recording can have a hole of about 130 ms that is not the loopback's (the server does
    /// not say it; see the issue), which this test would take for one.
    @Test func anAudioServerThatStallsDoesNotRunTheLoopbackDry() throws {
        let setup = try Setup()
        let a = try setup.pulse.playTone(frequency: 440, seconds: 20, amplitude: 0.4, applicationName: "A", latencyMilliseconds: 1000)
        defer { a.stop() }
        usleep(500_000)
        let url = setup.dir.url.appendingPathComponent("stalled.wav")
        let (process, errors) = try setup.startRecording(["--app-audio=A", "--duration", "6"], output: url)
        usleep(1_000_000)
        var stalls = 0
        for _ in 0..<8 where process.isRunning {
            try setup.pulse.stall(seconds: 0.15)
            stalls += 1
            usleep(400_000)
        }
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(stderr)")
        #expect(stalls >= 6, "the recording ended before the stalls: \(stderr)")
        let log = setup.pulse.log.split(separator: "\n")
        // The loopback was there (and the log says what it does at the level looked at).
        #expect(log.contains { $0.contains("module-loopback") && $0.contains("latency_msec=") }, "\(log.suffix(20))")
        let dry = log.filter { $0.contains("Could not peek into queue") }
        let audio = try MediaProbe.decodeAudio(url)
        let holes = Self.silences(in: audio, from: 0.5, to: Double(audio.count) / 48_000 - 0.3)
        #expect(dry.isEmpty, "the loopback ran dry \(dry.count) times; holes in the file (s, length): \(holes.map { String(format: "%.3f %.3f", $0.at, $0.length) })\n\(log.filter { $0.contains("module-loopback") && !$0.contains("Max request") }.suffix(12).joined(separator: "\n"))")
    }

    @Test func aStreamThatMayNotMoveIsReportedAndPlaysOnUnrecorded() throws {
        let setup = try Setup()
        let fixed = try PulsePlayer(server: setup.pulse.server, applicationName: "Fixed", frequency: 440, dontMove: true)
        let free = try PulsePlayer(server: setup.pulse.server, applicationName: "Free", frequency: 1000, dontMove: false)
        defer { fixed.stop(); free.stop() }
        usleep(300_000)
        let before = try setup.routing()
        let url = setup.dir.url.appendingPathComponent("fixed.m4a")
        let (process, errors) = try setup.startRecording(["--app-audio=fixed", "--app-audio=free", "--duration", "2"], output: url)
        usleep(700_000)
        #expect(try setup.sinks(of: "Fixed") == ["apps"])
        #expect(try setup.sinks(of: "Free").allSatisfy { $0.hasPrefix("reel-app-") })
        process.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 3, "\(stderr)")
        let events = setup.events(process)
        #expect(events.contains("\"sourceIncomplete\"") && events.contains("the stream of 'Fixed'") && events.contains("cannot be moved"), "\(events)")
        #expect(try setup.routing() == before)
        let audio = try MediaProbe.decodeAudio(url)
        let powers = Self.powers(audio, from: 0.5, to: 1.5, [440, 1000])
        #expect(powers[1000]! > 0.02 && powers[440]! < powers[1000]! / 1000, "\(Self.profile(audio))")
    }

    @Test func withoutPulseAudioTheErrorIsTheAudioSourcesOne() throws {
        let dir = try TemporaryDirectory()
        let r = try ReelBinary.run(["record", "--app-audio=A", "--duration", "1", "-o", dir.url.appendingPathComponent("x.m4a").path],
                                   environment: ["PULSE_SERVER": "unix:\(dir.url.path)/none", "XDG_RUNTIME_DIR": dir.url.path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("PulseAudio is not running"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("x.m4a").path))
    }

    @Test func devicesListsThePlayingApplications() throws {
        let setup = try Setup()
        let a = try setup.pulse.playTone(frequency: 440, seconds: 10, amplitude: 0.4, applicationName: "Player A", sink: "other")
        defer { a.stop() }
        usleep(300_000)
        let r = try ReelBinary.run(["devices"], environment: setup.environment)
        #expect(r.status == 0, "\(r.stderr)")
        let line = r.output.split(separator: "\n").first { $0.contains("Player A") }.map(String.init) ?? ""
        #expect(line.contains("pacat"), "\(r.output)")
        #expect(line.contains("other"), "\(r.output)")
        let json = try ReelBinary.run(["devices", "--json"], environment: setup.environment)
        #expect(json.output.contains("\"applications\""), "\(json.output)")
    }
}
