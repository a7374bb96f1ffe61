/// Words for a command line that a user may paste into a shell: the `reel recover …` commands
/// that errors and notes suggest.
public enum Shell {
    /// `word` quoted so that a POSIX shell reads it back as exactly that one word: in double
    /// quotes when nothing in it means anything there (what people read most easily), else in
    /// single quotes, with each `'` written as `'\''`, so that `$(…)`, backquotes, `"`, `\`,
    /// `!` and newlines in a file name stay part of the name.
    public static func quoted(_ word: String) -> String {
        let special: Set<Character> = ["$", "`", "\\", "\"", "!", "\n", "\r"]
        guard word.contains(where: { special.contains($0) }) else { return "\"\(word)\"" }
        var out = "'"
        for character in word {
            if character == "'" { out += "'\\''" } else { out.append(character) }
        }
        return out + "'"
    }
}
