import Foundation
import ReelCore
import ReelSystem

/// Where the CLI writes: standard output for results, standard error for progress and errors.
public final class Console: @unchecked Sendable {
    private let lock = NSLock()
    private var stdoutClosed = false
    /// Whether standard error is a terminal (progress lines are drawn only then).
    public let isTerminal: Bool

    public init(isTerminal: Bool = isatty(STDERR_FILENO) == 1) {
        self.isTerminal = isTerminal
    }

    /// Writes a line to standard output (see ``printable(_:)``).
    public func out(_ text: String) { write(Self.printable(text) + "\n", to: STDOUT_FILENO) }

    /// Writes a line to standard error (see ``printable(_:)``).
    public func err(_ text: String) { write(Self.printable(text) + "\n", to: STDERR_FILENO) }

    /// `text` with every control character a terminal acts on (ESC, a carriage return, a bell,
    /// C1) but a newline and a tab written as `\xHH` (`\uHHHH` past ASCII): a line names
    /// files, windows, applications and streams whose names someone else chose, and an escape
    /// sequence in one (a window's title, an application's name) would recolour, move or
    /// rewrite the user's terminal. Lines made of ours alone never hold one; names quoted for a
    /// shell are `$'…'` already (``Shell/quoted(_:)``).
    static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { Shell.isControl($0) && $0 != "\n" && $0 != "\t" }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            guard Shell.isControl(scalar), scalar != "\n", scalar != "\t" else { out.unicodeScalars.append(scalar); continue }
            out += Shell.hexEscape(scalar.value)
        }
        return out
    }

    /// Writes raw text to standard error (for a progress line that redraws itself).
    public func errRaw(_ text: String) { write(text, to: STDERR_FILENO) }

    private func write(_ text: String, to fd: Int32) {
        lock.lock(); defer { lock.unlock() }
        let bytes = Array(text.utf8)
        do {
            try bytes.withUnsafeBytes { try Syscall.writeAll(fd, $0, orThrow: { Syscall.error("writing", errno: $0) }) }
        } catch let error as ReelError where error.errno == EPIPE && fd == STDOUT_FILENO && !stdoutClosed {
            // `reel record --json | head -1`: the reader has gone; say so once, carry on.
            stdoutClosed = true
            let note = Array("reel: note: standard output was closed; nothing more is printed there (a recording goes on)\n".utf8)
            note.withUnsafeBytes { try? Syscall.writeAll(STDERR_FILENO, $0, orThrow: { Syscall.error("writing", errno: $0) }) }
        } catch {
            // A terminal or pipe that cannot take the text: nowhere left to say so.
        }
    }
}

/// Formatting of sizes and times for people.
enum Format {
    static func bytes(_ n: Int64) -> String {
        let v = Double(n)
        if v >= 1e9 { return String(format: "%.2f GB", v / 1e9) }
        if v >= 1e6 { return String(format: "%.1f MB", v / 1e6) }
        if v >= 1e3 { return String(format: "%.0f kB", v / 1e3) }
        return "\(n) B"
    }

    static func clock(seconds: Double) -> String {
        let s = max(0, seconds)
        let h = Int(s) / 3600, m = Int(s) / 60 % 60
        let rest = s - Double(h * 3600 + m * 60)
        return String(format: "%02d:%02d:%04.1f", h, m, rest)
    }

    /// `url`'s path for a line people read: as it is, unless it holds a control character (a
    /// newline, an escape sequence's ESC): then quoted as bash's `$'…'` reads it back, so that
    /// the line stays one line and says the name exactly (a newline in a name printed it on
    /// two lines: issue 26, F6).
    static func path(_ url: URL) -> String { path(url.path) }

    /// ``path(_:)`` of a path given as text.
    static func path(_ path: String) -> String {
        path.unicodeScalars.contains(where: Shell.isControl) ? Shell.ansiQuoted(path) : path
    }

    /// A message (an error's, which may name a file) kept on one line of a terminal: its
    /// control characters shown as ``printable(_:)`` shows them, the rest as it is (a path with
    /// a newline printed the message on two lines: issue 26, F6).
    static func oneLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: Shell.isControl) else { return text }
        return text.split(separator: "\\", omittingEmptySubsequences: false).map { printable(String($0)) }.joined(separator: "\\")
    }

    /// `text` (a title someone else gave, as a marker's) safe to print on one line of a
    /// terminal: control characters (a newline, an escape sequence's ESC, DEL, C1) shown as
    /// `\n`, `\t`, `\u{1B}`, and a backslash doubled so the escapes are not ambiguous.
    static func printable(_ text: String) -> String {
        Shell.escaped(text) { "\\u{\(String($0, radix: 16, uppercase: true))}" }
    }
}
