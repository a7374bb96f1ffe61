/// A command-line usage error: printed as one line, exit status 2.
public struct UsageError: Error, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// One option a command accepts.
public struct OptionSpec: Sendable {
    /// How an option takes a value.
    public enum Value: Sendable { case none, optional, required }

    /// What a shell completes as the option's value (the man page lists the fixed sets too).
    public enum Completion: Sendable, Equatable {
        /// Anything: the shell offers nothing.
        case anything
        /// A file name.
        case file
        /// A folder name.
        case directory
        /// One of a fixed set of words.
        case oneOf([String])
    }

    /// The long name without dashes (`screen`).
    public var name: String
    /// A one-letter alias without the dash (`o`), if any.
    public var short: Character?
    public var value: Value
    /// Whether the option may be given more than once.
    public var repeatable: Bool
    /// The value's placeholder in help (`FILE`).
    public var placeholder: String
    /// One line of help.
    public var help: String
    /// What a shell completes as the value.
    public var completion: Completion

    /// An option called `--name` (and `-short`), with the value and help it takes.
    public init(_ name: String, short: Character? = nil, value: Value = .none, repeatable: Bool = false,
                placeholder: String = "VALUE", completion: Completion = .anything, help: String) {
        self.completion = completion
        self.name = name
        self.short = short
        self.value = value
        self.repeatable = repeatable
        self.placeholder = placeholder
        self.help = help
    }

    /// The option as help shows it.
    public var synopsis: String {
        var s = "--\(name)"
        switch value {
        case .none: break
        case .optional: s += "[=\(placeholder)]"
        case .required: s += " \(placeholder)"
        }
        if let short { s = "-\(short), " + s }
        return s
    }
}

/// Parsed arguments: which options were given, with their values, and the positionals.
public struct ParsedArguments: Sendable {
    /// Values by option name, in order; `nil` for an option given without its optional value.
    public private(set) var values: [String: [String?]] = [:]
    public private(set) var positionals: [String] = []

    /// Whether the option was given.
    public func has(_ name: String) -> Bool { values[name] != nil }

    /// The last value of an option (`.some(nil)` when given without a value).
    public func value(_ name: String) -> String?? { values[name]?.last }

    /// Every value given for a repeatable option.
    public func all(_ name: String) -> [String?] { values[name] ?? [] }

    /// Parses `arguments` against `specs`. `--name=value`, `--name value` (for required
    /// values), `-o value`, `-ovalue` and `--` are understood.
    public static func parse(_ arguments: [String], specs: [OptionSpec]) throws -> ParsedArguments {
        var parsed = ParsedArguments()
        var byName: [String: OptionSpec] = [:]
        var byShort: [Character: OptionSpec] = [:]
        for spec in specs {
            byName[spec.name] = spec
            if let short = spec.short { byShort[short] = spec }
        }
        var i = 0
        var onlyPositionals = false
        func record(_ spec: OptionSpec, _ value: String?) throws {
            if !spec.repeatable && parsed.values[spec.name] != nil {
                throw UsageError("--\(spec.name) is given more than once")
            }
            parsed.values[spec.name, default: []].append(value)
        }
        while i < arguments.count {
            let arg = arguments[i]
            i += 1
            if onlyPositionals || arg == "-" || !arg.hasPrefix("-") {
                parsed.positionals.append(arg)
                continue
            }
            if arg == "--" { onlyPositionals = true; continue }
            if arg.hasPrefix("--") {
                let body = arg.dropFirst(2)
                let name: String
                var inline: String?
                if let eq = body.firstIndex(of: "=") {
                    name = String(body[..<eq])
                    inline = String(body[body.index(after: eq)...])
                } else {
                    name = String(body)
                }
                guard let spec = byName[name] else {
                    throw UsageError("unknown option --\(name)" + suggestion(for: name, among: specs.map(\.name)))
                }
                switch spec.value {
                case .none:
                    if inline != nil { throw UsageError("--\(name) takes no value") }
                    try record(spec, nil)
                case .optional:
                    try record(spec, inline)
                case .required:
                    if inline == nil {
                        guard i < arguments.count else { throw UsageError("--\(name) needs a value (\(spec.placeholder))") }
                        inline = arguments[i]
                        i += 1
                    }
                    try record(spec, inline)
                }
            } else {
                let letters = Array(arg.dropFirst())
                guard let first = letters.first, let spec = byShort[first] else {
                    throw UsageError("unknown option \(arg)")
                }
                switch spec.value {
                case .none:
                    guard letters.count == 1 else { throw UsageError("unknown option \(arg)") }
                    try record(spec, nil)
                case .optional:
                    try record(spec, letters.count > 1 ? String(letters.dropFirst()) : nil)
                case .required:
                    if letters.count > 1 {
                        try record(spec, String(letters.dropFirst()))
                    } else {
                        guard i < arguments.count else { throw UsageError("-\(first) needs a value (\(spec.placeholder))") }
                        try record(spec, arguments[i])
                        i += 1
                    }
                }
            }
        }
        return parsed
    }

    private static func suggestion(for name: String, among names: [String]) -> String {
        let close = names.filter { $0.hasPrefix(name) || name.hasPrefix($0) || editDistance($0, name) <= 2 }
        return close.isEmpty ? "" : " (did you mean --\(close[0])?)"
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var row = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in 1...max(b.count, 1) where !b.isEmpty {
                let old = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = old
            }
        }
        return row[b.count]
    }
}

/// Parsing of the numbers and sizes users type.
public enum ValueParser {
    /// A number as written out in decimal: digits with at most one `.`, and a `-` before them
    /// where `signed`; `nil` for anything else. What Swift's `Double(_:)` also reads, an
    /// exponent (`1e3` is 1000), hexadecimal (`0x10`), `inf`, `nan` or a `+`, is not taken: a
    /// number on the command line means what it shows.
    static func decimal(_ text: some StringProtocol, signed: Bool = false) -> Double? {
        let digits: Substring = signed && text.first == "-" ? Substring(text.dropFirst()) : Substring(text)
        guard digits.contains(where: { $0.isASCII && $0.isNumber }),
              digits.allSatisfy({ ($0.isASCII && $0.isNumber) || $0 == "." }), digits.filter({ $0 == "." }).count <= 1 else { return nil }
        return Double(String(text))
    }

    /// A whole number within `range`.
    public static func integer(_ text: String?, option: String, in range: ClosedRange<Int>) throws -> Int {
        guard let text, let n = Int(text) else {
            throw UsageError("--\(option) needs a whole number, not '\(text ?? "")'")
        }
        guard range.contains(n) else { throw UsageError("--\(option) must be between \(range.lowerBound) and \(range.upperBound), not \(n)") }
        return n
    }

    /// A duration: seconds (`90`, `2.5`, `90s`), minutes (`5m`), hours (`1h`), those combined
    /// largest first (`1h30m`, `2m30s`, `1h2m3s`; only the last may have a fraction), or
    /// `MM:SS` / `HH:MM:SS`.
    /// `allowsZero`: `0` (in any of the forms) is a value too (`--delay 0`: no delay, as a script
    /// that computes the delay may give).
    public static func duration(_ text: String?, option: String, allowsZero: Bool = false) throws -> MediaTimeValue {
        let examples = "10, 2.5s, 5m, 1h30m or 01:30"
        guard let text, !text.isEmpty else { throw UsageError("--\(option) needs a duration such as \(examples)") }
        var seconds: Double?
        if text.contains(":") {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false).map { decimal($0) }
            // Minutes and seconds after the first field are below 60 (01:30:99 is a typo).
            if parts.count <= 3, parts.allSatisfy({ $0 != nil && $0! >= 0 }), parts.dropFirst().allSatisfy({ $0! < 60 }) {
                seconds = parts.reduce(0) { $0 * 60 + $1! }
            }
        } else if let plain = decimal(text, signed: true) {
            seconds = plain
        } else {
            seconds = compoundDuration(text)
        }
        guard let s = seconds, s.isFinite else {
            throw UsageError("--\(option) needs a duration such as \(examples), not '\(text)'")
        }
        if allowsZero && s == 0 { return MediaTimeValue(seconds: 0) }
        guard s > 0 else { throw UsageError("--\(option) must be \(allowsZero ? "zero or more" : "more than zero"), not '\(text)'") }
        // Less than a hundredth of a second holds no frame at any frame rate reel records.
        guard s >= 0.01 else { throw UsageError("--\(option) of '\(text)' is too short to hold a frame (at least 0.01 s)") }
        guard s <= 7 * 24 * 3600 else { throw UsageError("--\(option) of '\(text)' is longer than a week") }
        return MediaTimeValue(seconds: s)
    }

    /// Seconds of `1h30m`-style text: numbers each followed by `h`, `m` or `s`, in that order,
    /// each unit at most once, a fraction only in the last; `nil` for anything else.
    private static func compoundDuration(_ text: String) -> Double? {
        let units: [(Character, Double)] = [("h", 3600), ("m", 60), ("s", 1)]
        var rest = Substring(text)
        var total = 0.0
        var nextUnit = 0
        var sawFraction = false
        while !rest.isEmpty {
            guard !sawFraction, let end = rest.firstIndex(where: { "hms".contains($0) }) else { return nil }
            let number = rest[..<end]
            guard let u = units[nextUnit...].firstIndex(where: { $0.0 == rest[end] }),
                  let value = decimal(number), value.isFinite else { return nil }
            sawFraction = number.contains(".")
            total += value * units[u].1
            nextUnit = u + 1
            rest = rest[rest.index(after: end)...]
        }
        return total
    }

    /// A bit rate within `range`: `4000000`, `4000k`, `4M`. `what` follows the range in the
    /// message (" for AAC").
    public static func bitRate(_ text: String?, option: String, in range: ClosedRange<Int>, what: String = "") throws -> Int {
        guard let text, !text.isEmpty else { throw UsageError("--\(option) needs a bit rate such as 4M or 160k") }
        var number = Substring(text.lowercased())
        var scale = 1.0
        if number.hasSuffix("k") { number = number.dropLast(); scale = 1_000 }
        else if number.hasSuffix("m") { number = number.dropLast(); scale = 1_000_000 }
        guard let value = decimal(number), value.isFinite, value > 0 else {
            throw UsageError("--\(option) needs a bit rate such as 4M or 160k, not '\(text)'")
        }
        let bits = (value * scale).rounded()
        guard bits >= Double(range.lowerBound), bits <= Double(range.upperBound) else {
            throw UsageError("--\(option) must be between \(rate(range.lowerBound)) and \(rate(range.upperBound))\(what), not \(text)")
        }
        return Int(bits)
    }

    /// A bit rate as users write it: `10k`, `500M`, `1500`.
    static func rate(_ bits: Int) -> String {
        if bits >= 1_000_000 && bits % 1_000_000 == 0 { return "\(bits / 1_000_000)M" }
        if bits >= 1_000 && bits % 1_000 == 0 { return "\(bits / 1_000)k" }
        return String(bits)
    }
}

extension ValueParser {
    /// A size in bytes: `1000000`, `500k`, `500M`, `2G`, `1.5GB` (powers of 1000), `64MiB`
    /// (powers of 1024).
    public static func size(_ text: String?, option: String, allowsZero: Bool) throws -> Int64 {
        guard let text, !text.isEmpty else { throw UsageError("--\(option) needs a size such as 500M, 2G or 64MiB") }
        // A plain decimal number (no hexadecimal, no exponent, no sign) and a unit: K, M, G, T in
        // powers of 1000, KiB…TiB in powers of 1024, with or without a B; B or nothing for bytes.
        let upper = text.uppercased()
        let digits = upper.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
        let units: [String: Double] = ["": 1, "B": 1, "K": 1e3, "KB": 1e3, "KIB": 0x1p10, "M": 1e6, "MB": 1e6, "MIB": 0x1p20,
                                       "G": 1e9, "GB": 1e9, "GIB": 0x1p30, "T": 1e12, "TB": 1e12, "TIB": 0x1p40]
        guard let scale = units[String(upper.dropFirst(digits.count))],
              digits.first?.isNumber == true, digits.last?.isNumber == true, digits.filter({ $0 == "." }).count <= 1,
              let value = Double(digits), allowsZero || value > 0 else {
            throw UsageError("--\(option) needs a size such as 500M, 2G or 64MiB, not '\(text)'")
        }
        let bytes = (value * scale).rounded()
        guard bytes <= 1e18 else { throw UsageError("--\(option) of '\(text)' is too large (at most 1000000T)") }
        guard allowsZero || bytes >= 1 else { throw UsageError("--\(option) must be at least 1 byte, not '\(text)'") }
        return Int64(bytes)
    }
}

extension Array where Element == String {
    /// The items for a message: "a, b or c".
    var listedWithOr: String {
        count <= 1 ? joined() : dropLast().joined(separator: ", ") + " or " + last!
    }
}

/// Seconds parsed from the command line.
public struct MediaTimeValue: Sendable, Equatable {
    public var seconds: Double
}
