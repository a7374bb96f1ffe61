import Foundation
import Testing
import ReelTestSupport
@testable import ReelCLI

/// File names in what people read: a name holding a newline or an escape sequence is printed
/// on one line, in a form bash reads back as exactly that name (issue 26, F6: `Saved
/// /tmp/bad/x` and `y.mp4` came on two lines; JSON always escaped it).
@Suite struct PrintedPathTests {
    /// What bash makes of `word` (a `$'…'` quoted name read back).
    func bashReads(_ word: String) throws -> String {
        let bash = Process()
        bash.executableURL = URL(fileURLWithPath: "/bin/bash")
        bash.arguments = ["-c", "printf %s \(word)"]
        let pipe = Pipe()
        bash.standardOutput = pipe
        try bash.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        bash.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test func aPlainPathIsPrintedAsItIs() {
        #expect(Format.path("/tmp/my films/it's \\ \"here\".mp4") == "/tmp/my films/it's \\ \"here\".mp4")
    }

    @Test(arguments: ["/tmp/bad/x\ny.mp4", "/tmp/\u{1B}[31mred\u{7}.mp4", "/tmp/it's\t\\n\r.mkv", "/tmp/c1\u{9B}é.mp4"])
    func aPathWithControlCharactersIsOneLineThatBashReadsBack(path: String) throws {
        let printed = Format.path(path)
        #expect(!printed.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, "\(printed)")
        #expect(try bashReads(printed) == path, "\(printed)")
    }

    /// Every line the CLI prints goes out without a control character a terminal acts on:
    /// a name someone else chose (a window's title, an application's, a stream's) in a warning
    /// cannot recolour or rewrite the user's terminal (s43 stranger: warnings printed names
    /// raw). Newlines and tabs of our own lines stay.
    @Test func linesPrintedHoldNoControlCharacterButNewlinesAndTabs() {
        #expect(Console.printable("reel: warning: plain\tline\nand another") == "reel: warning: plain\tline\nand another")
        let printed = Console.printable("reel: warning: window \u{1B}[2J\u{1B}]0;title\u{7} \r \u{9B}31m stopped")
        #expect(printed == "reel: warning: window \\x1B[2J\\x1B]0;title\\x07 \\x0D \\u009B31m stopped", "\(printed)")
        #expect(!printed.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, "\(printed)")
    }

    /// The note on a cut-off recording left in the folder, and the command it suggests: one
    /// line (s43 stranger: the name and the command's quoted name went out raw).
    @Test func theNoteOnALeftoverStaysOnOneLine() throws {
        for urls in [[URL(fileURLWithPath: "/tmp/k2\nill\u{1B}[2J.mp4")],
                     [URL(fileURLWithPath: "/tmp/a\nb/x.mp4"), URL(fileURLWithPath: "/tmp/a\nb/y\n.mp4")]] {
            let notes = RecordCommand.leftoverNotes(cutOff: urls, unmerged: [])
            #expect(notes.count == 1 && !notes[0].unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, "\(notes)")
        }
    }

    @Test func anErrorMessageStaysOnOneLine() {
        #expect(Format.oneLine("/tmp/x\ny.mp4 already exists") == "/tmp/x\\ny.mp4 already exists")
        #expect(Format.oneLine("C:\\films is not a folder") == "C:\\films is not a folder", "backslashes as they are")
    }

    /// Through the command: the summary's first line and an error naming the file.
    @Test func theCommandPrintsANewlineInANameOnOneLine() throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("x\ny.mp4")
        let r = try ReelBinary.run(["record", "--test-pattern", "--duration", "0.5", "--faster-than-real-time", "-o", file.path])
        #expect(r.status == 0, "\(r.stderr)")
        let first = r.output.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.hasPrefix("Saved $'") && first.hasSuffix("x\\ny.mp4'"), "\(r.output)")
        #expect(try bashReads(String(first.dropFirst("Saved ".count))) == file.path)
        let again = try ReelBinary.run(["record", "--test-pattern", "--duration", "0.5", "--faster-than-real-time", "-o", file.path])
        #expect(again.status == 1)
        let errors = again.stderr.split(separator: "\n")
        #expect(errors.count == 1 && errors[0].contains("x\\ny.mp4 already exists"), "\(again.stderr)")
    }
}
