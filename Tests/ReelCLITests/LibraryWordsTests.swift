import Foundation
import Testing
@testable import ReelCLI
import Reel

/// Library errors and hints speak to a library user: they name the API to call, never a `reel`
/// command or flag (`LibraryHint` in the library, `CommandLineHints` in the CLI). Every string
/// literal in the library's sources is read, so a new hint that names one fails here.
@Suite struct LibraryWordsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let libraryTargets = ["ReelCore", "ReelSystem", "ReelFFmpeg", "ReelLinux", "Reel"]

    /// Other programs' command lines a library hint may name (what to run to look at a
    /// camera, a service or FFmpeg's filters): their flags are not `reel`'s.
    static var otherPrograms: Regex<(Substring, Substring)> { #/\b(v4l2-ctl|systemctl|journalctl|pulseaudio|ffmpeg)\b[^;,)`']*/# }

    /// The `reel` commands and flags in `text`.
    static func commandLineWords(in text: String) -> [String] {
        let text = text.replacing(otherPrograms, with: "")
        var found: [String] = []
        for command in CommandDescription.all where text.contains(try! Regex("\\breel \(command.name)\\b")) {
            found.append("reel \(command.name)")
        }
        let flags = Set(CommandDescription.all.flatMap(\.specs).map(\.name))
        for match in text.matches(of: #/(?:^|[^A-Za-z0-9-])--([a-z][a-z0-9-]*)/#) where flags.contains(String(match.output.1)) {
            found.append("--\(match.output.1)")
        }
        let shorts = Set(CommandDescription.all.flatMap(\.specs).compactMap(\.short))
        for match in text.matches(of: #/(?:^|[\s(])-([a-zA-Z])(?:$|[\s)=,;])/#) where shorts.contains(Character(String(match.output.1))) {
            found.append("-\(match.output.1)")
        }
        return found
    }

    @Test func noLibrarySourceSaysACommandLineCommandOrFlag() throws {
        var said: [String] = []
        var literalCount = 0
        for target in Self.libraryTargets {
            let folder = Self.root.appendingPathComponent("Sources/\(target)")
            let files = try #require(FileManager.default.enumerator(atPath: folder.path)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
            #expect(!files.isEmpty, "no sources in \(folder.path)")
            for file in files.sorted() {
                let source = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                for literal in SwiftStringLiterals.scan(source) {
                    literalCount += 1
                    for word in Self.commandLineWords(in: literal.text) {
                        said.append("Sources/\(target)/\(file):\(literal.line): \(word) in \"\(literal.text)\"")
                    }
                }
            }
        }
        #expect(literalCount > 1000, "the scanner found only \(literalCount) string literals")
        #expect(said.isEmpty, "library texts that name the command line (say it with LibraryHint, and the CLI's words in CommandLineHints):\n\(said.joined(separator: "\n"))")
    }

    /// The check itself: it finds what the hints said before, and lets other programs' flags be.
    @Test func theCheckFindsCommandsAndFlags() {
        #expect(Self.commandLineWords(in: "finalise it with: reel recover \u{FFFC}") == ["reel recover"])
        #expect(Self.commandLineWords(in: "merge them elsewhere: reel recover \u{FFFC} -o FILE|FOLDER") == ["reel recover", "-o"])
        #expect(Self.commandLineWords(in: "record the screen instead (--region)") == ["--region"])
        #expect(Self.commandLineWords(in: "merge the clips with reel merge") == ["reel merge"])
        #expect(Self.commandLineWords(in: "record with: v4l2-ctl -d /dev/videoN --all; v4l2-ctl --list-formats-ext").isEmpty)
        #expect(Self.commandLineWords(in: "check that PipeWire runs: systemctl --user status pipewire").isEmpty)
        #expect(Self.commandLineWords(in: LibraryHint.finalise("/videos/a b.mp4")).isEmpty)
        let literals = SwiftStringLiterals.scan(#"""
            // "reel recover" in a comment
            let a = "one \(f("two")) three" /* "four" */
            let b = #"five "six""#
            let c = """
                seven
                """
            """#)
        #expect(literals.map(\.text) == ["one \u{FFFC} three", "two", #"five "six""#, "    seven"])
        #expect(literals.map(\.line) == [2, 2, 3, 4])
    }

    /// Each library hint that names a path has the command line's words, which name the path
    /// (quoted for a shell) and no library call.
    @Test func hintsThatNameAPathAreSaidAsCommands() {
        let path = "/videos/my \"best\" take.mp4"
        #expect(Set(CommandLineHints.commands.map(\.library)) == Set(LibraryHint.withPaths))
        for (library, _) in CommandLineHints.commands {
            let error = ReelError(.ioFailure, "failed", hint: "before; \(library(path)); after")
            let said = CommandLineHints.rephrased(error).hint ?? ""
            #expect(said.hasPrefix("before; ") && said.hasSuffix("; after"), "\(said)")
            #expect(!said.contains("Recovery") && !said.contains("VideoFilter"), "a library call in the command line's hint: \(said)")
            #expect(said.contains(Shell.quoted(path)) || said.contains("--filter \(path)"), "\(said)")
            #expect(!Self.commandLineWords(in: said).isEmpty, "\(said)")
        }
        // The GIF's hint ends as the finalising one does: it is said as itself.
        let gif = ReelError(.fileExists, "taken", hint: "the recording is kept in /v/.a.gif-1-2.mp4; \(LibraryHint.makeTheGIF("/v/.a.gif-1-2.mp4"))")
        #expect(CommandLineHints.rephrased(gif).hint == "the recording is kept in /v/.a.gif-1-2.mp4; make it into the GIF with: reel recover \(Shell.quoted("/v/.a.gif-1-2.mp4"))")
        // Two in one hint, and a path with the hint's own words in it.
        let two = ReelError(.ioFailure, "failed", hint: "\(LibraryHint.finalise("/v/finalise x.mp4")); \(LibraryHint.mergeTheClips("/v/x.clips"))")
        #expect(CommandLineHints.rephrased(two).hint == "finalise it with: reel recover \(Shell.quoted("/v/finalise x.mp4")); merge them with: reel recover \(Shell.quoted("/v/x.clips"))")
    }

    /// The library's hints of fixed words are all said in the command line's (each once).
    @Test func fixedHintsHaveTheirCommandLineWords() {
        for (library, commandLine) in CommandLineHints.flags {
            #expect(Self.commandLineWords(in: library).isEmpty, "\(library)")
            #expect(!Self.commandLineWords(in: commandLine).isEmpty, "the command line's words name no flag or command: \(commandLine)")
        }
        #expect(Set(CommandLineHints.flags.map(\.library)).count == CommandLineHints.flags.count)
    }
}

/// The string literals of Swift source text, with their lines: plain, raw (`#"…"#`) and
/// multi-line; comments skipped; an interpolation's value is U+FFFC in its string, and the
/// strings inside it are literals of their own.
enum SwiftStringLiterals {
    struct Literal { var line: Int; var text: String }

    static func scan(_ source: String) -> [Literal] {
        var scanner = Scanner(s: Array(source))
        scanner.code(interpolation: false)
        return scanner.found.sorted { $0.order < $1.order }.map(\.literal)
    }

    private struct Scanner {
        let s: [Character]
        var i = 0
        var line = 1
        var found: [(order: Int, literal: Literal)] = []

        func starts(_ text: String, at index: Int) -> Bool {
            let t = Array(text)
            return index + t.count <= s.count && Array(s[index..<(index + t.count)]) == t
        }

        mutating func advance() {
            if s[i] == "\n" { line += 1 }
            i += 1
        }

        mutating func code(interpolation: Bool) {
            var depth = 0
            while i < s.count {
                if starts("//", at: i) {
                    while i < s.count, s[i] != "\n" { advance() }
                } else if starts("/*", at: i) {
                    while i < s.count, !starts("*/", at: i) { advance() }
                    i = min(i + 2, s.count)
                } else if s[i] == "\"" || (s[i] == "#" && { var j = i; while j < s.count, s[j] == "#" { j += 1 }; return j < s.count && s[j] == "\"" }()) {
                    string()
                } else {
                    if interpolation, s[i] == "(" { depth += 1 }
                    if interpolation, s[i] == ")" {
                        if depth == 0 { i += 1; return }
                        depth -= 1
                    }
                    advance()
                }
            }
        }

        mutating func string() {
            var hashes = 0
            while s[i] == "#" { hashes += 1; i += 1 }
            let multiline = starts("\"\"\"", at: i)
            let startLine = line
            let order = found.count
            found.append((order, Literal(line: startLine, text: "")))
            if multiline {
                i += 3
                while i < s.count, s[i] != "\n" { advance() }
                if i < s.count { advance() }
            } else {
                i += 1
            }
            let close = (multiline ? "\"\"\"" : "\"") + String(repeating: "#", count: hashes)
            let escape = "\\" + String(repeating: "#", count: hashes)
            var text = ""
            while i < s.count {
                if starts(close, at: i) { i += close.count; break }
                if starts(escape, at: i) {
                    i += escape.count
                    if i < s.count, s[i] == "(" {
                        i += 1
                        code(interpolation: true)
                        text.append("\u{FFFC}")
                    } else if i < s.count {
                        text.append(s[i])
                        advance()
                    }
                    continue
                }
                if !multiline, s[i] == "\n" { break }
                text.append(s[i])
                advance()
            }
            if multiline, text.hasSuffix("\n") || text.last?.isWhitespace == true {
                // The closing delimiter's indentation and the newline before it.
                while let last = text.last, last == " " { text.removeLast() }
                if text.hasSuffix("\n") { text.removeLast() }
            }
            found[order].literal.text = text
        }
    }
}
