import Foundation

/// The man page, `reel(1)`, in roff: generated from `reel --help`, each command's help text and
/// its option table, so the page and `reel COMMAND --help` cannot disagree. scripts/install and
/// scripts/package write it with `reel manpage`.
enum ManPage {
    /// The page for this build's version.
    static func render(version: String = VersionCommand.version) -> String {
        var page = [
            #".TH REEL 1 "" "reel \#(escape(version))" "User Commands""#,
            // No hyphenation, ragged right: option names and paths stay whole, as typed.
            ".nh",
            ".ad l",
            ".SH NAME",
            #"reel \- record screens, cameras and audio on Linux into MP4, MOV, MKV, WebM or GIF files"#,
            ".SH SYNOPSIS",
            #".B reel"#,
            #".I command"#,
            #"[\fIoptions\fR]"#,
            ".br",
            #".B reel \-\-version"#,
            ".br",
            #".B reel \-\-help"#,
            ".SH DESCRIPTION",
            "\(escape(ReelCommandLine.help.split(separator: "\n").first.map(String.init) ?? ""))",
            ".PP",
            "Run",
            #".B reel \fIcommand\fP \-\-help"#,
            "for a command's help: it says what this page says about the command.",
            #".B reel \-\-version"#,
            "prints reel's version and commit and the versions of FFmpeg, x264, XCB and libpulse found at run time.",
            ".SH COMMANDS",
        ]
        for command in CommandDescription.all {
            page.append(#".SS "reel \#(command.name)""#)
            if !command.summary.isEmpty { page += [escape(sentence(command.summary)), ".PP"] }
            page += body(command.help)
            page.append(".PP")
            page.append("Options:")
            page += command.specs.flatMap(option)
        }
        page += [
            ".SH EXIT STATUS",
            escape(ExitStatus.text),
            ".SH FILES",
            ".TP",
            #"\fI$XDG_VIDEOS_DIR\fR, \fI~/Videos\fR"#,
            "where recordings go without \\fB\\-o\\fR (a dated name).",
            ".TP",
            "Shell completions",
            "bash, zsh and fish completions are generated from the same option tables",
            #"(\fBreel completions bash\fR|\fBzsh\fR|\fBfish\fR) and installed with reel."#,
            ".SH SEE ALSO",
            #".BR ffmpeg (1),"#,
            #".BR ffprobe (1)"#,
        ]
        return page.joined(separator: "\n") + "\n"
    }

    /// A command's help text as roff: the usage lines and examples kept as they are, the
    /// paragraphs filled.
    private static func body(_ help: String) -> [String] {
        var out: [String] = []
        var literal = false
        func setLiteral(_ on: Bool) {
            if on != literal { out.append(on ? ".nf" : ".fi"); literal = on }
        }
        for raw in help.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            if line.trimmingCharacters(in: .whitespaces).isEmpty {
                setLiteral(false)
                if out.last != ".PP" { out.append(".PP") }
                continue
            }
            // Usage lines, example lines (indented) and their continuations stay as typed.
            let keep = line.hasPrefix("Usage:") || line.hasPrefix("  ")
            if keep {
                setLiteral(true)
                out.append(escape(line))
            } else {
                setLiteral(false)
                out.append(escape(line))
            }
        }
        setLiteral(false)
        while out.last == ".PP" { out.removeLast() }
        return out
    }

    /// One option as a tagged paragraph: `-o, --output FILE` and its help.
    private static func option(_ spec: OptionSpec) -> [String] {
        var tag = #"\fB\-\-\#(escape(spec.name))\fR"#
        switch spec.value {
        case .none: break
        case .optional: tag += #"[=\fI\#(escape(spec.placeholder))\fR]"#
        case .required: tag += #" \fI\#(escape(spec.placeholder))\fR"#
        }
        if let short = spec.short { tag = #"\fB\-\#(short)\fR, "# + tag }
        return [".TP", tag, escape(spec.help)]
    }

    /// A summary as a sentence: capitalised, with a full stop.
    private static func sentence(_ text: String) -> String {
        guard let first = text.first else { return text }
        return first.uppercased() + text.dropFirst() + (text.hasSuffix(".") ? "" : ".")
    }

    /// Text made safe for roff: backslashes, minus signs, a leading dot or quote, and
    /// characters beyond ASCII as groff's `\[uXXXX]`.
    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += #"\e"#
            case "-": out += #"\-"#
            case _ where scalar.value > 0x7e: out += #"\[u"# + String(format: "%04X", scalar.value) + "]"
            default: out.unicodeScalars.append(scalar)
            }
        }
        if out.hasPrefix(".") || out.hasPrefix("'") { out = #"\&"# + out }
        return out
    }
}
