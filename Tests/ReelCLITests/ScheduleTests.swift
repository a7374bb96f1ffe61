import Foundation
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// `--start-at` / `--stop-at` read as local times, against a fixed now.
@Suite struct ScheduleParsingTests {
    static var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Europe/Berlin")!
        return calendar
    }
    /// 2026-12-05 14:00:00 in Berlin.
    static let now = calendar.date(from: DateComponents(year: 2026, month: 12, day: 5, hour: 14))!

    @Test func readsTimesOfTodayAndDates() throws {
        #expect(try RecordSchedule.seconds(until: "14:30", option: "start-at", from: Self.now, calendar: Self.calendar) == 1800)
        #expect(try RecordSchedule.seconds(until: "14:00:15", option: "start-at", from: Self.now, calendar: Self.calendar) == 15)
        #expect(try RecordSchedule.seconds(until: "2026-12-06 14:00", option: "stop-at", from: Self.now, calendar: Self.calendar) == 86400)
    }

    @Test(arguments: ["13:59", "2026-12-04 15:00", "25:00", "14:60", "14", "14:30:99", "2026-02-30 10:00", "tomorrow", "12:00 pm",
                            "2026-13-01 10:00", "9999-12-31 23:59", "99999-12-05 10:00", "2026-12-20 10:00"])
    func refusesTimesThatPassedOrAreNotTimes(_ text: String) {
        #expect(throws: UsageError.self) { try RecordSchedule.seconds(until: text, option: "start-at", from: Self.now, calendar: Self.calendar) }
    }

    @Test func aStopBeforeTheStartAndTwoStartsAreRefused() throws {
        func parse(_ words: [String]) throws -> RecordSchedule {
            try RecordSchedule(try ParsedArguments.parse(words, specs: RecordOptions.specs), now: Self.now, calendar: Self.calendar)
        }
        #expect(try parse(["--delay", "5"]).start == MediaTime(seconds: 5))
        // s6 N15: a delay of zero (as a script that computes it may give) is no delay, not an error.
        #expect(try parse(["--delay", "0"]).start == nil)
        #expect(try parse(["--delay", "0s"]).start == nil)
        #expect(throws: UsageError.self) { try parse(["--delay", "-1"]) }
        #expect(try parse(["--start-at", "14:10", "--stop-at", "14:20"]) == RecordSchedule(start: MediaTime(seconds: 600), stop: MediaTime(seconds: 1200)))
        #expect(throws: UsageError.self) { try parse(["--start-at", "14:20", "--stop-at", "14:10"]) }
        #expect(throws: UsageError.self) { try parse(["--delay", "5", "--start-at", "14:10"]) }
    }
}

/// `--delay` and `--stop-at` on the session clock, a manual one (`--faster-than-real-time`), and
/// a stop before the start in real time.
@Suite(.serialized, .tags(.realTime)) struct ScheduleRecordingTests {
    @Test func aDelayStartsOnItsFrameWithTheSourcesAlreadyRunning() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("delayed.mp4")
        let r = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--faster-than-real-time",
                                    "--duration", "1", "--delay", "3", "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters == (90..<120).map { Optional(Int64($0)) }, "the frames of session time 3 s to 4 s")
    }

    @Test func aStopAtEndsTheRecordingThere() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("until.mp4")
        let stop = Date().addingTimeInterval(6)
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm:ss"
        let r = try ReelBinary.run(["record", "--test-pattern", "--size", "320x240", "--preset", "ultrafast", "--faster-than-real-time",
                                    "--duration", "60", "--delay", "2", "--stop-at", formatter.string(from: stop), "-o", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).compactMap(\.counter)
        // From session time 2 s to the stop, 5 to 6 s away when the options were read (whole seconds).
        #expect(counters.first == 60)
        #expect((30 * 4 - 2 ... 30 * 6 + 2).contains(Int(counters.last ?? 0)), "\(counters.last ?? -1)")
        #expect(zip(counters, counters.dropFirst()).allSatisfy { $1 == $0 + 1 })
    }

    /// On a terminal the countdown keeps its line (no PAUSED line over it) and space says
    /// recording has not begun instead of pausing.
    @Test func theCountdownKeepsItsLineAndSpaceSaysNotYet() throws {
        let driver = TerminalScript.start(["\"record\"", "\"--test-pattern\"", "\"--size\"", "\"160x120\"", "\"--preset\"", "\"ultrafast\"",
                                           "\"--delay\"", "\"5\"", "\"--duration\"", "\"1\"", "\"-o\"", "path"]) + """
            steps = {"countdown": read_until(rb"Recording begins in 5 s", 20)}
            steps["counts"] = read_until(rb"Recording begins in [34] s", 20)
            os.write(fd, b" ")
            steps["notYet"] = read_until(rb"not recording yet; it starts in", 20)
            steps["recording"] = read_until(rb"REC ", 30)
            """ + TerminalScript.finish
        let dir = try TemporaryDirectory()
        let script = dir.url.appendingPathComponent("countdown.py")
        try driver.write(to: script, atomically: true, encoding: .utf8)
        let url = dir.url.appendingPathComponent("counted.mp4")
        let run = try Subprocess.run(["python3", script.path, ReelBinary.url.path, url.path])
        let result = try JSONSerialization.jsonObject(with: run.stdout) as? [String: Any] ?? [:]
        let output = result["output"] as? String ?? run.stderr
        let steps = result["steps"] as? [String: Bool] ?? [:]
        #expect(steps["countdown"] == true && steps["notYet"] == true && steps["recording"] == true, "\(output)")
        #expect(steps["counts"] == true, "the count goes down: \(output)")
        #expect(!output.contains("PAUSED"), "the wait is not shown as a pause: \(output)")
        #expect(result["status"] as? Int == 0, "\(output)")
        #expect(try MediaProbe.decodeLuma(url, width: 160, height: 120).count >= 25, "space did not start it early nor pause it")
    }

    /// Over the control socket and in the JSON events the wait is its own state.
    @Test func theWaitIsItsOwnStateOverTheSocketAndInEvents() async throws {
        let dir = try TemporaryDirectory()
        let socket = dir.url.appendingPathComponent("wait.sock")
        let events = dir.url.appendingPathComponent("events.jsonl")
        let recording = try ControlSocketTests.Recording(["--delay", "4", "--duration", "1", "--json", "--control=\(socket.path)",
                                                          "-o", dir.url.appendingPathComponent("waited.mp4").path], in: dir.url, output: events)
        let control = try await recording.connect(socket, state: "waiting")
        let status = try control.request("status").reply
        #expect(status["state"] as? String == "waiting", "\(status)")
        #expect((status["startsIn"] as? Double ?? 0) > 0 && status["startsAt"] is String, "\(status)")
        for command in ["pause", "resume"] {
            let reply = try control.request(command).reply
            #expect(reply["ok"] as? Bool == false && (reply["error"] as? String ?? "").contains("not recording yet; it starts in"), "\(reply)")
        }
        let end = recording.end()
        #expect(end.status == 0, "\(end.stderr)")
        let names = try String(contentsOf: events, encoding: .utf8).split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["event"] as? String
        }
        #expect(names.contains("waiting") && names.contains("begun"), "\(names)")
        // `started` when recording starts: after the wait, just before `begun`.
        let started = names.firstIndex(of: "started") ?? -1
        #expect(started > (names.firstIndex(of: "waiting") ?? .max) && started + 1 == names.firstIndex(of: "begun"), "\(names)")
        #expect(!names.contains("paused") && !names.contains("resumed"), "\(names)")
        let waiting = names.firstIndex(of: "waiting") ?? .max, begun = names.firstIndex(of: "begun") ?? -1
        #expect(waiting < begun)
    }

    /// No file: a failure for a script (exit 1), as any stop before the first frame; with
    /// `--json` a `failed` event, and no `started` (nothing started).
    @Test(arguments: [false, true])
    func aStopBeforeTheStartWritesNothingAndIsAFailure(json: Bool) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("never.mp4")
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--test-pattern", "--size", "320x240", "--delay", "60", "-o", url.path] + (json ? ["--json"] : [])
        let errors = Pipe(), output = Pipe()
        process.standardError = errors
        process.standardOutput = output
        try process.run()
        try await Task.sleep(for: .seconds(2))
        kill(process.processIdentifier, SIGINT)
        let events = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 1, "\(text)\(events)")
        #expect(text.contains("stopped before the recording began") && text.contains("no file was written"), "\(text)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
        guard json else { return }
        let objects = events.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let names = objects.compactMap { $0["event"] as? String }
        #expect(names.contains("waiting") && !names.contains("started") && !names.contains("finished"), "\(names)")
        #expect(objects.last?["event"] as? String == "failed" && objects.last?["code"] as? String == "nothingRecorded", "\(events)")
    }
}
