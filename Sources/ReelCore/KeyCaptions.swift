import Foundation

/// What typing looks like as a caption, screenkey- and KeyCastr-style: letters grouped into
/// words, chords as `Ctrl+Shift+T`, a key pressed again and again collapsed (`⌫ ×5`), the
/// line cleared after a pause. A value fed key presses in time order and asked for the
/// caption at a picture's time.
package struct KeyCaptions: Sendable {
    /// One piece of a caption line.
    package enum Segment: Sendable, Equatable {
        /// Typed text (letters, digits, signs and spaces).
        case text(String)
        /// A key or chord shown by its name, pressed `count` times in a row.
        case key(String, count: Int)
    }

    /// How long a caption stays whole after the last key.
    package var holdDuration = MediaTime(seconds: 2)
    /// How long it then takes to fade out.
    package var fadeDuration = MediaTime(seconds: 0.5)
    /// The most characters a line shows (older ones scroll out to the left).
    package var maximumLength = 48
    /// The chord that hides (and shows again) the captions: Ctrl+Alt+K.
    package static let hideChord = KeyPress(keysym: 0x6B, modifiers: [.control, .alt])

    /// The line now.
    package private(set) var segments: [Segment] = []
    /// Whether the hide chord hid the captions (keys pressed meanwhile are not kept).
    package private(set) var isHidden = false
    private var lastKey: MediaTime?
    /// The accent of a dead key pressed last (a combining mark), put on the next letter.
    private var pendingAccent: (mark: Unicode.Scalar, alone: Character)?

    /// Captions with the default timing.
    package init() {}

    /// Takes in a key pressed at `time` (not before any key fed earlier).
    package mutating func press(_ key: KeyPress, at time: MediaTime) {
        if Self.isHideChord(key) {
            isHidden.toggle()
            segments = []
            lastKey = nil
            return
        }
        guard !isHidden else { return }
        if key.modifiers.intersection([.control, .alt, .super]).isEmpty, let accent = Self.deadAccent(of: key.keysym) {
            pendingAccent = accent
            return
        }
        let accent = pendingAccent
        pendingAccent = nil
        guard var piece = Self.piece(for: key) else { return }
        if let accent, case .text(let typed) = piece {
            // A dead key's accent goes on the letter after it (before a space: the accent alone).
            piece = .text(typed == " " ? String(accent.alone) : (typed + String(Character(accent.mark))).precomposedStringWithCanonicalMapping)
        }
        if let last = lastKey, time - last >= holdDuration + fadeDuration { segments = [] }
        lastKey = time
        switch (piece, segments.last) {
        case (.text(let typed), .text(let before)?):
            segments[segments.count - 1] = .text(before + typed)
        case (.key(let name, _), .key(let before, let count)?) where name == before:
            segments[segments.count - 1] = .key(name, count: count + 1)
        default:
            segments.append(piece)
        }
        trim()
    }

    /// Forgets the line (keys pressed while a recording was paused are never drawn, nor is what
    /// was typed before the pause drawn after it).
    package mutating func clear() {
        segments = []
        lastKey = nil
        pendingAccent = nil
    }

    /// The caption to draw at `time` with its opacity (1 whole, fading to 0), or `nil` when
    /// there is none.
    package func caption(at time: MediaTime) -> (text: String, opacity: Double)? {
        guard !isHidden, let lastKey, !segments.isEmpty else { return nil }
        let age = (time - lastKey).seconds
        let hold = holdDuration.seconds, fade = fadeDuration.seconds
        guard age < hold + fade else { return nil }
        let opacity = age <= hold ? 1 : max(0, 1 - (age - hold) / fade)
        return (Self.render(segments), opacity)
    }

    /// The line as it is drawn.
    package static func render(_ segments: [Segment]) -> String {
        segments.map { segment in
            switch segment {
            case .text(let typed): return typed
            case .key(let name, let count): return count > 1 ? "\(name) ×\(count)" : name
            }
        }.joined(separator: " ")
    }

    /// Keeps the line within ``maximumLength`` characters, dropping what was typed first.
    private mutating func trim() {
        while Self.render(segments).count > maximumLength {
            guard case .text(let typed) = segments.first, typed.count > 1 else {
                if segments.count > 1 { segments.removeFirst(); continue }
                return
            }
            segments[0] = .text(String(typed.dropFirst(Self.render(segments).count - maximumLength)))
            if case .text(let left) = segments[0], left.isEmpty { segments.removeFirst() }
        }
    }

    private static func isHideChord(_ key: KeyPress) -> Bool {
        let letter = key.keysym | 0x20  // K or k
        return letter == hideChord.keysym && key.modifiers.subtracting(.shift) == hideChord.modifiers
    }

    /// What `key` adds to a line: text, a named key or chord, or nothing (a modifier alone,
    /// a key without a name).
    package static func piece(for key: KeyPress) -> Segment? {
        let chord = key.modifiers.intersection([.control, .alt, .super])
        if let character = character(of: key.keysym) {
            if chord.isEmpty { return .text(String(character)) }
            let shown = character == " " ? "Space" : String(character).uppercased()
            return .key(prefix(key.modifiers) + shown, count: 1)
        }
        guard let name = name(of: key.keysym) else { return nil }
        return .key(prefix(key.modifiers) + name, count: 1)
    }

    /// `Ctrl+Alt+Super+Shift+`, for the modifiers in `modifiers`.
    private static func prefix(_ modifiers: KeyModifiers) -> String {
        var names: [String] = []
        if modifiers.contains(.control) { names.append("Ctrl") }
        if modifiers.contains(.alt) { names.append("Alt") }
        if modifiers.contains(.super) { names.append("Super") }
        if modifiers.contains(.shift) { names.append("Shift") }
        return names.map { $0 + "+" }.joined()
    }

    /// The character a keysym types: Latin-1, Latin-2 (Czech, Polish, Hungarian…), Cyrillic,
    /// Greek, the euro, Unicode keysyms (what a program typing any character sends) and the
    /// keypad's digits and signs.
    package static func character(of keysym: UInt32) -> Character? {
        switch keysym {
        case 0x20...0x7E, 0xA0...0xFF: return Unicode.Scalar(keysym).map(Character.init)
        case 0x1A1...0x1FF: return table(latin2, keysym - 0x1A1)
        case 0x6C0...0x6FF: return table(cyrillic, keysym - 0x6C0)
        case 0x6A3: return "ё"
        case 0x6B3: return "Ё"
        case 0x7F2: return "ς"
        case 0x7C1...0x7D9: return table(greek, keysym - 0x7C1)
        case 0x7E1...0x7F9: return table(greek.lowercased(), keysym - 0x7E1)
        case 0x20AC: return "€"
        case 0x0100_00A0...0x0110_FFFF: return Unicode.Scalar(keysym - 0x0100_0000).map(Character.init)
        case 0xFFB0...0xFFB9: return Unicode.Scalar(keysym - 0xFFB0 + 0x30).map(Character.init)
        case 0xFFAA: return "*"
        case 0xFFAB: return "+"
        case 0xFFAD: return "-"
        case 0xFFAE: return "."
        case 0xFFAF: return "/"
        default: return nil
        }
    }

    /// The keysyms 0x1A1 to 0x1FF: ISO 8859-2's upper half (a space where it has none).
    private static let latin2 = "Ą˘Ł ĽŚ§¨ŠŞŤŹ ŽŻ°ą˛ł´ľśˇ¸šşťź˝žżŔÁÂĂÄĹĆÇČÉĘËĚÍÎĎĐŃŇÓÔŐÖ×ŘŮÚŰÜÝŢßŕáâăäĺćçčéęëěíîďđńňóôőö÷řůúűüýţ˙"
    /// The keysyms 0x6C0 to 0x6FF: KOI8-R's letters, small then capital.
    private static let cyrillic = "юабцдефгхийклмнопярстужвьызшэщчъЮАБЦДЕФГХИЙКЛМНОПЯРСТУЖВЬЫЗШЭЩЧЪ"
    /// The keysyms 0x7C1 to 0x7D9 (and their small letters, 0x7E1 to 0x7F9): ISO 8859-7's
    /// capitals.
    private static let greek = "ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡ ΣΤΥΦΧΨΩ"

    /// The `index`th character of `table`, unless it is a space (no character there).
    private static func table(_ table: String, _ index: UInt32) -> Character? {
        let characters = Array(table)
        guard Int(index) < characters.count, characters[Int(index)] != " " else { return nil }
        return characters[Int(index)]
    }

    /// The accent a dead key (dead_grave to dead_ogonek) puts on the next letter: its combining
    /// mark, and the accent alone (what it types before a space).
    private static func deadAccent(of keysym: UInt32) -> (mark: Unicode.Scalar, alone: Character)? {
        let accents: [(UInt32, Character)] = [(0x300, "`"), (0x301, "´"), (0x302, "^"), (0x303, "~"), (0x304, "¯"), (0x306, "˘"), (0x307, "˙"),
                                              (0x308, "¨"), (0x30A, "˚"), (0x30B, "˝"), (0x30C, "ˇ"), (0x327, "¸"), (0x328, "˛")]
        guard keysym >= 0xFE50, keysym < 0xFE50 + UInt32(accents.count) else { return nil }
        let (mark, alone) = accents[Int(keysym - 0xFE50)]
        return Unicode.Scalar(mark).map { ($0, alone) }
    }

    /// The name of a key that types nothing; `nil` for modifiers and keys without a name.
    private static func name(of keysym: UInt32) -> String? {
        switch keysym {
        case 0xFF08: return "⌫"
        case 0xFF09, 0xFE20: return "⇥"
        case 0xFF0D, 0xFF8D: return "↵"
        case 0xFF1B: return "Esc"
        case 0xFFFF: return "Del"
        case 0xFF50: return "Home"
        case 0xFF51: return "←"
        case 0xFF52: return "↑"
        case 0xFF53: return "→"
        case 0xFF54: return "↓"
        case 0xFF55: return "PgUp"
        case 0xFF56: return "PgDn"
        case 0xFF57: return "End"
        case 0xFF63: return "Ins"
        case 0xFF61: return "Print"
        case 0xFFBE...0xFFD5: return "F\(keysym - 0xFFBE + 1)"
        default: return nil
        }
    }
}
