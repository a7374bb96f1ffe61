import Foundation

/// One JSON object as one line of text, the keys sorted: the `--json` events of `reel` and the
/// lines of a recording's control socket.
///
/// Written here rather than with `JSONSerialization`, whose sorted keys are compared by ICU's
/// collation: every `--json` recording loaded ICU's tables (a few MiB of memory) for that
/// alone. The text is the same as `JSONSerialization` wrote with `.sortedKeys`: keys in its
/// order for keys of ASCII letters, digits and punctuation (without case, punctuation before
/// digits before letters, digits compared as numbers, lower case first on a tie), `/` escaped,
/// whole numbers of a `Double` without a fraction, `Double`s in Swift's shortest form.
package enum JSONLine {
    /// The JSON text of `object`, or `nil` if it holds something JSON cannot say (a value that
    /// is not a string, number, Boolean, array, object or null, or a number that is not finite).
    package static func encode(_ object: [String: Any]) -> String? {
        var out = ""
        return write(object, to: &out) ? out : nil
    }

    private static func write(_ value: Any, to out: inout String) -> Bool {
        switch value {
        case let b as Bool:
            out += b ? "true" : "false"
        case let s as String:
            writeString(s, to: &out)
        case let s as Substring:
            writeString(String(s), to: &out)
        case let i as any BinaryInteger:
            out += "\(i)"
        case let d as Double:
            return writeNumber(d, description: d.description, to: &out)
        case let f as Float:
            return writeNumber(Double(f), description: f.description, to: &out)
        case let object as [String: Any]:
            out += "{"
            for (n, key) in object.keys.sorted(by: precedes).enumerated() {
                if n > 0 { out += "," }
                writeString(key, to: &out)
                out += ":"
                guard write(object[key]!, to: &out) else { return false }
            }
            out += "}"
        case let array as [Any]:
            out += "["
            for (n, element) in array.enumerated() {
                if n > 0 { out += "," }
                guard write(element, to: &out) else { return false }
            }
            out += "]"
        case is NSNull:
            out += "null"
        default:
            // An optional that is nil (a `T?` put into `Any`); anything else is not JSON.
            guard let optional = value as? any OptionalProtocol else { return false }
            guard let wrapped = optional.wrapped else { out += "null"; return true }
            return write(wrapped, to: &out)
        }
        return true
    }

    private static func writeNumber(_ d: Double, description: String, to out: inout String) -> Bool {
        guard d.isFinite else { return false }
        out += description.hasSuffix(".0") ? String(description.dropLast(2)) : description
        return true
    }

    private static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "/": out += "\\/"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{8}": out += "\\b"
            case "\u{C}": out += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// Whether key `a` comes before `b`: letters compared without case, runs of digits as
    /// numbers (`a9` before `a10`), and on a tie the lower-case letter first (`a` before `A`).
    package static func precedes(_ a: String, _ b: String) -> Bool {
        let x = Array(a.unicodeScalars), y = Array(b.unicodeScalars)
        var i = 0, j = 0
        while i < x.count && j < y.count {
            if isDigit(x[i]) && isDigit(y[j]) {
                let (m, nextI) = digits(x, from: i), (n, nextJ) = digits(y, from: j)
                if m != n { return m.count != n.count ? m.count < n.count : m < n }
                i = nextI
                j = nextJ
                continue
            }
            let p = (rank(x[i]), folded(x[i])), q = (rank(y[j]), folded(y[j]))
            if p != q { return p < q }
            i += 1
            j += 1
        }
        if (x.count - i) != (y.count - j) { return (x.count - i) < (y.count - j) }
        // Equal without case: the first letter whose case differs decides, lower case first.
        for (p, q) in zip(x, y) where p != q && folded(p) == folded(q) {
            return p.properties.isLowercase
        }
        // Equal as numbers (`a9`, `a09`): the shorter first, then any fixed order.
        return x.count != y.count ? x.count < y.count : a < b
    }

    /// Punctuation and symbols before digits before letters, as ICU's collation orders them.
    private static func rank(_ s: Unicode.Scalar) -> Int {
        isDigit(s) ? 1 : s.properties.isAlphabetic ? 2 : 0
    }

    private static func isDigit(_ s: Unicode.Scalar) -> Bool { ("0"..."9").contains(s) }

    /// The run of digits at `start` without its leading zeros, and where the run ends.
    private static func digits(_ s: [Unicode.Scalar], from start: Int) -> (String, Int) {
        var end = start
        while end < s.count && isDigit(s[end]) { end += 1 }
        var run = String(String.UnicodeScalarView(s[start..<end]))
        while run.count > 1 && run.hasPrefix("0") { run.removeFirst() }
        return (run, end)
    }

    private static func folded(_ s: Unicode.Scalar) -> String { s.properties.lowercaseMapping }
}

/// Lets ``JSONLine`` see through an `Optional` held in an `Any`.
package protocol OptionalProtocol {
    /// The wrapped value, `nil` when there is none.
    var wrapped: Any? { get }
}

extension Optional: OptionalProtocol {
    package var wrapped: Any? {
        switch self {
        case .some(let value): value
        case .none: nil
        }
    }
}
