/// Words for a command line that a user may paste into a shell: the `reel recover …` commands
/// that errors and notes suggest.
public enum Shell {
    /// `word` quoted so that a shell reads it back as exactly that one word: in double quotes
    /// when nothing in it means anything there (what people read most easily), else in single
    /// quotes, with each `'` written as `'\''`, so that `$(…)`, backquotes, `"`, `\` and `!` in
    /// a file name stay part of the name. A word holding a control character (a newline, an
    /// escape sequence's ESC) is written as bash, zsh and ksh read `$'…'`, its control
    /// characters escaped, so that the line printed stays one line and shows them.
    public static func quoted(_ word: String) -> String {
        if word.unicodeScalars.contains(where: isControl) { return ansiQuoted(word) }
        let special: Set<Character> = ["$", "`", "\\", "\"", "!"]
        guard word.contains(where: { special.contains($0) }) else { return "\"\(word)\"" }
        var out = "'"
        for character in word {
            if character == "'" { out += "'\\''" } else { out.append(character) }
        }
        return out + "'"
    }

    /// Whether `scalar` is a control character (C0, DEL or C1): what a terminal may act on.
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `word` in `$'…'`: a backslash and `'` escaped, a newline, tab and carriage return as
    /// `\n`, `\t`, `\r`, other control characters as `\xHH` (`\uHHHH` past ASCII).
    package static func ansiQuoted(_ word: String) -> String {
        "$'" + escaped(word, also: ["'": "\\'"], control: hexEscape) + "'"
    }

    /// The control character of `value` as bash's `$'…'` writes it: `\xHH`, `\uHHHH` past ASCII.
    package static func hexEscape(_ value: UInt32) -> String {
        let hex = String(value, radix: 16, uppercase: true)
        return value < 0x80 ? "\\x" + String(repeating: "0", count: 2 - hex.count) + hex
                            : "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
    }

    /// `text` with a backslash doubled, a newline, tab and carriage return as `\n`, `\t`, `\r`,
    /// each scalar of `also` as it says, and every other control character as `control` writes
    /// its value: what a line for a terminal shows of a name or title given by someone else.
    package static func escaped(_ text: String, also: [Unicode.Scalar: String] = [:], control: (UInt32) -> String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if let replacement = also[scalar] {
                out += replacement
                continue
            }
            switch scalar {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case _ where isControl(scalar): out += control(scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
