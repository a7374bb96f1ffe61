import Foundation
import Testing
@testable import ReelCLI
import Reel
import ReelTestSupport

/// `reel completions bash|zsh|fish`: generated from the option tables, loaded by the real
/// shells. Bash's completion function is driven as bash drives it (COMP_WORDS, COMP_CWORD);
/// fish completes a command line itself (`complete -C`); zsh is syntax-checked.
@Suite struct ShellCompletionTests {
    /// The script for `shell`, as `reel completions SHELL` prints it, in a file.
    private func scriptFile(_ shell: String, in dir: TemporaryDirectory) throws -> URL {
        let result = try ReelBinary.run(["completions", shell])
        #expect(result.status == 0, "\(result.stderr)")
        let file = dir.url.appendingPathComponent("reel.\(shell)")
        try result.stdout.write(to: file)
        return file
    }

    /// What bash's completion offers for `words`, the last being the word being typed.
    private func bashComplete(_ words: [String], script: URL, in folder: URL? = nil) throws -> [String] {
        let quoted = words.map { "'" + $0.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }.joined(separator: " ")
        let program = """
        source '\(script.path)'
        COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); COMPREPLY=()
        _reel
        printf '%s\\n' "${COMPREPLY[@]}"
        """
        let result = try Subprocess.run(["bash", "--norc", "--noprofile", "-c", program], currentDirectory: folder)
        #expect(result.status == 0, "\(result.stderr)")
        return result.output.split(separator: "\n").map(String.init)
    }

    @Test func bashRegistersTheCompletion() throws {
        let dir = try TemporaryDirectory()
        let script = try scriptFile("bash", in: dir)
        let result = try Subprocess.run(["bash", "--norc", "--noprofile", "-c", "source '\(script.path)' && complete -p reel"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.output == "complete -F _reel reel\n")
    }

    @Test func bashCompletesCommandsOptionsAndValues() throws {
        let dir = try TemporaryDirectory()
        let script = try scriptFile("bash", in: dir)
        #expect(try bashComplete(["reel", "record", "--sc"], script: script) == ["--screen", "--screen-choose"])
        #expect(try bashComplete(["reel", "rec"], script: script) == ["record", "recover"])
        #expect(try bashComplete(["reel", "record", "--layout", ""], script: script) == ["pip", "side-by-side", "grid"])
        // `--layout=s`, split at '=' as bash does with the default COMP_WORDBREAKS, and whole.
        #expect(try bashComplete(["reel", "record", "--layout", "=", "s"], script: script) == ["side-by-side"])
        #expect(try bashComplete(["reel", "record", "--layout=s"], script: script) == ["--layout=side-by-side"])
        #expect(try bashComplete(["reel", "record", "--format", "m"], script: script) == ["mp4", "mov", "mkv", "m4a"])
        // The sound-only formats are offered too.
        #expect(try bashComplete(["reel", "record", "--format", ""], script: script) == ["mp4", "mov", "mkv", "m4a", "opus", "ogg", "flac", "wav", "webm", "gif"])
        #expect(try bashComplete(["reel", "record", "--codec", "h"], script: script) == ["h264", "hevc"])
        // A value the user types (a size) gets no option names offered in its place.
        #expect(try bashComplete(["reel", "record", "--size", ""], script: script).isEmpty)
        #expect(try bashComplete(["reel", "help", "d"], script: script) == ["devices", "doctor"])
        #expect(try bashComplete(["reel", "doctor", "--ca"], script: script) == ["--camera"])
        // --filter offers reel's looks (a libavfilter graph is typed; issue 26 item 18).
        #expect(try bashComplete(["reel", "record", "--filter", ""], script: script) == ["mono", "comic", "crystal"])
        #expect(try bashComplete(["reel", "record", "--filter", "c"], script: script) == ["comic", "crystal"])
    }

    /// `reel completions --help` and `reel manpage --help` say how to use them (issue 26 item
    /// 18: they were usage errors).
    @Test func theDocumentationCommandsHaveHelp() throws {
        for (command, usage) in [("completions", "Usage: reel completions SHELL"), ("manpage", "Usage: reel manpage")] {
            for flag in ["--help", "-h"] {
                let result = try ReelBinary.run([command, flag])
                #expect(result.status == 0, "\(command) \(flag): \(result.stderr)")
                #expect(result.output.hasPrefix(usage), "\(command) \(flag): \(result.output)")
            }
        }
        #expect(try ReelBinary.run(["completions", "bash"]).output.contains("complete -F _reel reel"), "the scripts are as they were")
    }

    @Test func bashCompletesFilesAndFolders() throws {
        let dir = try TemporaryDirectory()
        let script = try scriptFile("bash", in: dir)
        let work = dir.url.appendingPathComponent("work")
        try FileManager.default.createDirectory(at: work.appendingPathComponent("takes"), withIntermediateDirectories: true)
        try Data().write(to: work.appendingPathComponent("talk.mp4"))
        #expect(try bashComplete(["reel", "record", "-o", "ta"], script: script, in: work).sorted() == ["takes", "talk.mp4"])
        #expect(try bashComplete(["reel", "record", "--keep-clips", "ta"], script: script, in: work) == ["takes"])
        #expect(try bashComplete(["reel", "merge", "ta"], script: script, in: work).sorted() == ["takes", "talk.mp4"])
        // `reel record` takes no file arguments: only -o does.
        #expect(try bashComplete(["reel", "record", "ta"], script: script, in: work).isEmpty)
    }

    @Test func bashOffersEveryOptionOfEveryCommand() throws {
        let dir = try TemporaryDirectory()
        let script = try scriptFile("bash", in: dir)
        for command in CommandDescription.all {
            let offered = Set(try bashComplete(["reel", command.name, "-"], script: script))
            let expected = Set(command.specs.flatMap { spec in ["--\(spec.name)"] + (spec.short.map { ["-\($0)"] } ?? []) })
            #expect(offered == expected, "reel \(command.name)")
        }
    }

    @Test func fishCompletesFromTheScript() throws {
        let dir = try TemporaryDirectory()
        let script = try scriptFile("fish", in: dir)
        #expect(try Subprocess.run(["fish", "--no-config", "-n", script.path]).status == 0)
        func complete(_ line: String) throws -> [String] {
            let result = try Subprocess.run(["fish", "--no-config", "-c", "source '\(script.path)'; complete -C '\(line)'"])
            #expect(result.status == 0, "\(result.stderr)")
            return result.output.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }
        }
        #expect(try complete("reel record --sc") == ["--screen", "--screen-choose"])
        #expect(try complete("reel record --layout ").sorted() == ["grid", "pip", "side-by-side"])
        #expect(try complete("reel rec").sorted() == ["record", "recover"])
    }

    @Test func zshScriptParses() throws {
        let dir = try TemporaryDirectory()
        let script = try scriptFile("zsh", in: dir)
        let result = try Subprocess.run(["zsh", "-n", script.path])
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
        #expect(try String(contentsOf: script, encoding: .utf8).hasPrefix("#compdef reel\n"))
    }

    @Test func anUnknownShellIsAUsageError() throws {
        let result = try ReelBinary.run(["completions", "tcsh"])
        #expect(result.status == 2)
        #expect(result.stderr.hasPrefix("reel: reel completions needs one shell: bash, zsh or fish\n"))
    }

    /// Every fixed value the completions offer is one `reel record` accepts (with a codec it
    /// goes with, for profiles; sound only, into a file of its kind, for sound-only formats and
    /// lossless codecs).
    @Test func everyOfferedValueIsAccepted() throws {
        for spec in RecordOptions.specs {
            guard case .oneOf(let values) = spec.completion else { continue }
            for value in values {
                // Profiles go with a codec; layouts need a second picture; HLS segments need --hls;
                // window sizes need --window; frame modes the screen alone.
                let withVideo = [[], ["--camera=test:red"], ["--hls", "/tmp/reel-hls"], ["--window"]] + VideoCodec.allCases.map { ["--codec", $0.rawValue] }
                let soundOnly = [[]] + Container.allCases.filter(\.isAudioOnly).map { ["--format", $0.rawValue] }
                let variants = withVideo.map { ["--test-pattern", "--tone"] + $0 } + soundOnly.map { ["--tone"] + $0 } + [["--screen"]]
                let accepted = variants.contains { extra in
                    guard let parsed = try? ParsedArguments.parse(["--\(spec.name)", value] + extra,
                                                                  specs: RecordOptions.specs),
                          let options = try? RecordOptions(parsed) else { return false }
                    return (try? options.validateCombinations()) != nil
                }
                #expect(accepted, "--\(spec.name) \(value) is offered but refused")
            }
        }
    }
}
