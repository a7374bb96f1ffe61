import Foundation
import Testing
import ReelTestSupport

/// `--json` prints events for programs, but a person may run it on a terminal: the keys work
/// there as without it (space pauses, q stops), rather than being ignored without a word.
@Suite(.serialized, .tags(.realTime)) struct KeysWithJSONTests {
    static let driver = TerminalScript.start(["\"record\"", "\"--test-pattern\"", "\"--size\"", "\"160x120\"", "\"--preset\"", "\"ultrafast\"",
                                              "\"--json\"", "\"-o\"", "path"]) + """
        steps = {"started": read_until(rb'"started"')}
        time.sleep(0.5)
        os.write(fd, b" ")
        steps["paused"] = read_until(rb'"paused"', 20)
        os.write(fd, b"q")
        steps["finished"] = read_until(rb'"finished"', 60)
        """ + TerminalScript.finish

    @Test func spacePausesAndQStopsWithJSONOnATerminal() throws {
        let dir = try TemporaryDirectory()
        let script = dir.url.appendingPathComponent("terminal.py")
        try Self.driver.write(to: script, atomically: true, encoding: .utf8)
        let url = dir.url.appendingPathComponent("keys.mp4")
        let run = try Subprocess.run(["python3", script.path, ReelBinary.url.path, url.path])
        let result = try JSONSerialization.jsonObject(with: run.stdout) as? [String: Any] ?? [:]
        let output = result["output"] as? String ?? run.stderr
        let steps = result["steps"] as? [String: Bool] ?? [:]
        #expect(steps["started"] == true, "\(output)")
        #expect(steps["paused"] == true, "space paused: \(output)")
        #expect(steps["finished"] == true, "q stopped: \(output)")
        #expect(result["status"] as? Int == 0, "\(output)")
        #expect(FileManager.default.fileExists(atPath: url.path))
    }
}
