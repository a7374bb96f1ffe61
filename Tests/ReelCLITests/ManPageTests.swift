import Foundation
import Testing
@testable import ReelCLI
import ReelTestSupport

/// `reel manpage`: the man page and each command's `--help` agree (every option of every
/// command in both, the commands `reel --help` lists, the examples), and groff and man render
/// the page without a warning.
@Suite struct ManPageTests {
    /// The page as `reel manpage` prints it.
    private func page() throws -> String {
        let result = try ReelBinary.run(["manpage"])
        #expect(result.status == 0, "\(result.stderr)")
        return result.output
    }

    /// The option names (without dashes) in each `.SS "reel COMMAND"` section's tagged paragraphs.
    private func optionsBySection(_ page: String) -> [String: Set<String>] {
        var sections: [String: Set<String>] = [:]
        var current: String?
        var tagNext = false
        for line in page.split(separator: "\n").map(String.init) {
            if line.hasPrefix(".SS \"reel ") {
                current = String(line.dropFirst(".SS \"reel ".count).dropLast())
                sections[current!] = []
            } else if line.hasPrefix(".SH") {
                current = nil
            } else if line == ".TP" {
                tagNext = true
                continue
            } else if tagNext, let section = current {
                let tag = line.replacingOccurrences(of: #"\-"#, with: "-")
                for match in tag.matches(of: /--([a-z0-9-]+)/) { sections[section]!.insert(String(match.1)) }
            }
            tagNext = false
        }
        return sections
    }

    /// The option names in the "Options:" table of `reel COMMAND --help`.
    private func helpOptions(_ command: String) throws -> Set<String> {
        let help = try ReelBinary.run([command, "--help"])
        #expect(help.status == 0)
        let table = help.output.components(separatedBy: "Options:\n").last ?? ""
        return Set(table.split(separator: "\n").compactMap { line in
            line.firstMatch(of: /^  (?:-[a-zA-Z], )?--([a-z0-9-]+)/).map { String($0.1) }
        })
    }

    @Test func everyOptionOfEveryCommandIsInThePageAndNoOther() throws {
        let sections = optionsBySection(try page())
        let listed = Set(CommandDescription.listedCommands.map(\.name))
        #expect(Set(sections.keys) == listed, "the page's commands differ from reel --help's")
        for command in listed.sorted() {
            let help = try helpOptions(command)
            #expect(!help.isEmpty, "reel \(command) --help lists no options")
            #expect(sections[command] == help,
                    "reel \(command): only in the page \(sections[command, default: []].subtracting(help).sorted()), only in --help \(help.subtracting(sections[command, default: []]).sorted())")
        }
    }

    @Test func everyCommandListedByHelpHasItsSection() {
        // A command added to `reel --help` but not to CommandDescription.all would be missing
        // from the page and the completions.
        #expect(CommandDescription.listedCommands.map(\.name) == CommandDescription.all.map(\.name))
        #expect(CommandDescription.all.allSatisfy { !$0.summary.isEmpty })
    }

    @Test func rendersWithoutWarningsAndShowsTheHelpTexts() throws {
        let dir = try TemporaryDirectory()
        let file = dir.url.appendingPathComponent("reel.1")
        try page().write(to: file, atomically: true, encoding: .utf8)

        let groff = try Subprocess.run(["groff", "-man", "-ww", "-z", file.path])
        #expect(groff.status == 0 && groff.stderr.isEmpty, "groff: \(groff.stderr)")

        let man = try Subprocess.run(["man", "--warnings", "-l", file.path],
                                     environment: ["MANPAGER": "cat", "MANWIDTH": "200", "LANG": "C.UTF-8", "MAN_KEEP_FORMATTING": ""])
        #expect(man.status == 0 && man.stderr.isEmpty, "man: \(man.stderr)")
        let shown = man.output
        #expect(shown.contains("REEL(1)"))
        // Every example and usage line of every command's help is on the page as typed, and
        // every option's help sentence.
        for command in CommandDescription.all {
            for line in command.help.split(separator: "\n") where line.hasPrefix("  ") || line.hasPrefix("Usage:") {
                let text = line.trimmingCharacters(in: .whitespaces)
                #expect(shown.contains(text), "reel \(command.name): '\(text)' is not on the page")
            }
            for spec in command.specs {
                let words = spec.help.split(separator: " ").prefix(6).joined(separator: " ")
                #expect(shown.replacingOccurrences(of: "\n", with: " ").split(separator: " ").joined(separator: " ").contains(words),
                        "reel \(command.name) --\(spec.name): '\(words)' is not on the page")
            }
        }
    }

    @Test func roffEscapes() {
        #expect(ManPage.escape(".hidden") == #"\&.hidden"#)
        #expect(ManPage.escape("a\\b") == #"a\eb"#)
        #expect(ManPage.escape("--fps 1…2") == #"\-\-fps 1\[u2026]2"#)
    }
}
