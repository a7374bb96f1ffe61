import Foundation
import Testing
@testable import ReelCLI
import ReelTestSupport

/// What `reel control` and the recorder's terminal say, without a recording: titles printed
/// safely, a PID with no command, and what a stop leads to.
@Suite struct ControlClientWordsTests {
    /// A marker's title goes to the recorder's terminal on one line: control characters
    /// escaped (a newline split the line, an escape sequence reached the terminal).
    @Test func titlesArePrintedWithControlCharactersEscaped() {
        #expect(Format.printable("tést \n newline") == "tést \\n newline")
        #expect(Format.printable("\u{1B}[31mred\u{7}\t\\") == "\\u{1B}[31mred\\u{7}\\t\\\\")
        #expect(Format.printable("\u{9B}x") == "\\u{9B}x")
    }

    /// `reel control PID` without a command says the command is missing (it said
    /// "unknown command 'PID'").
    @Test(arguments: ["1891", "/tmp/rec.sock"])
    func aRecordingNamedWithoutACommandIsSaid(target: String) throws {
        let r = try ReelBinary.run(["control", target])
        #expect(r.status == 2 && r.stderr.contains("no command after '\(target)'"), "\(r.stderr)")
    }

    /// The stop's reply says what will happen: a file finalised, nothing before a scheduled
    /// start, no file for a recording that writes none (it always promised a file).
    @Test func aStopSaysWhatItLeadsTo() {
        #expect(ControlCommand.describe(["outcome": "finalising"], command: "stop") == "stopping (the file is being finalised)")
        #expect(ControlCommand.describe(["outcome": "nothingWritten"], command: "stop").contains("nothing is written"))
        #expect(ControlCommand.describe(["outcome": "noFile"], command: "stop").contains("writes no file"))
    }
}
