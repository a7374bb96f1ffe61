import Testing
import ReelCore

/// Typing becomes a caption the way screenkey and KeyCastr show it, exactly, on the times given.
@Suite struct KeyCaptionsTests {
    static func type(_ text: String, into captions: inout KeyCaptions, from start: Double, every step: Double = 0.1) -> Double {
        var time = start
        for character in text {
            let shifted = character.isUppercase
            captions.press(KeyPress(character, modifiers: shifted ? .shift : []), at: MediaTime(seconds: time))
            time += step
        }
        return time
    }

    @Test func lettersAreGroupedIntoWordsWithTheirSpaces() {
        var captions = KeyCaptions()
        let end = Self.type("Hello world", into: &captions, from: 1)
        #expect(captions.caption(at: MediaTime(seconds: end))?.text == "Hello world")
        #expect(captions.segments == [.text("Hello world")])
    }

    @Test func aKeyPressedAgainAndAgainIsCollapsed() {
        var captions = KeyCaptions()
        var time = Self.type("word", into: &captions, from: 0)
        for _ in 0..<5 {
            captions.press(KeyPress(keysym: 0xFF08), at: MediaTime(seconds: time))
            time += 0.05
        }
        captions.press(KeyPress(keysym: 0xFF0D), at: MediaTime(seconds: time))
        #expect(captions.caption(at: MediaTime(seconds: time))?.text == "word ⌫ ×5 ↵")
    }

    @Test func chordsNameTheirModifiers() {
        var captions = KeyCaptions()
        captions.press(KeyPress("T", modifiers: [.control, .shift]), at: MediaTime(seconds: 1))
        captions.press(KeyPress("c", modifiers: .control), at: MediaTime(seconds: 1.2))
        captions.press(KeyPress("c", modifiers: .control), at: MediaTime(seconds: 1.3))
        captions.press(KeyPress(keysym: 0xFF09, modifiers: [.alt]), at: MediaTime(seconds: 1.4))
        captions.press(KeyPress(keysym: 0xFFE1, modifiers: []), at: MediaTime(seconds: 1.5))  // Shift alone: nothing
        #expect(captions.caption(at: MediaTime(seconds: 1.5))?.text == "Ctrl+Shift+T Ctrl+C ×2 Alt+⇥")
    }

    @Test func theCaptionHoldsThenFadesThenIsGoneAndTheNextKeyStartsANewLine() {
        var captions = KeyCaptions()
        let end = Self.type("ls", into: &captions, from: 10)  // last key at 10.1
        #expect(captions.caption(at: MediaTime(seconds: 12.0))?.opacity == 1)
        let fading = captions.caption(at: MediaTime(seconds: 12.35))
        #expect(fading?.text == "ls")
        #expect(fading.map { $0.opacity > 0.4 && $0.opacity < 0.6 } == true, "\(String(describing: fading))")
        #expect(captions.caption(at: MediaTime(seconds: 12.6)) == nil)
        _ = Self.type("pwd", into: &captions, from: end + 5)
        #expect(captions.caption(at: MediaTime(seconds: end + 5.3))?.text == "pwd")
    }

    @Test func ctrlAltKHidesTheCaptionsAndKeepsNothingUntilPressedAgain() {
        var captions = KeyCaptions()
        _ = Self.type("user", into: &captions, from: 0)
        captions.press(KeyPress("k", modifiers: [.control, .alt]), at: MediaTime(seconds: 1))
        #expect(captions.caption(at: MediaTime(seconds: 1)) == nil)
        _ = Self.type("secret", into: &captions, from: 1.1)
        #expect(captions.caption(at: MediaTime(seconds: 1.8)) == nil)
        captions.press(KeyPress("k", modifiers: [.control, .alt]), at: MediaTime(seconds: 2))
        #expect(captions.caption(at: MediaTime(seconds: 2)) == nil)
        _ = Self.type("ok", into: &captions, from: 2.1)
        #expect(captions.caption(at: MediaTime(seconds: 2.3))?.text == "ok")
    }

    @Test func aLongLineKeepsItsNewestCharacters() {
        var captions = KeyCaptions()
        captions.maximumLength = 10
        let end = Self.type("abcdefghijklmnop", into: &captions, from: 0, every: 0.01)
        #expect(captions.caption(at: MediaTime(seconds: end))?.text == "ghijklmnop")
    }

    @Test("accented and other letters are captioned as typed: Latin-1, Latin-2, Cyrillic, Greek and Unicode keysyms (é, ü and 日本 were '?' or left out)")
    func lettersBeyondASCIIAreCaptionedAsTyped() {
        var captions = KeyCaptions()
        // eacute, egrave, agrave (a French keyboard), udiaeresis, ssharp; scaron, lstroke,
        // odoubleacute (Latin-2); Cyrillic_ya, Greek_omega; 日本 as a program types them.
        let keysyms: [UInt32] = [0xE9, 0xE8, 0xE0, 0xFC, 0xDF, 0x1B9, 0x1B3, 0x1F5, 0x6D1, 0x7F9, 0x0100_65E5, 0x0100_672C]
        for (index, keysym) in keysyms.enumerated() {
            captions.press(KeyPress(keysym: keysym), at: MediaTime(seconds: 1 + 0.1 * Double(index)))
        }
        #expect(captions.caption(at: MediaTime(seconds: 2.2))?.text == "éèàüßšłőяω日本")
        #expect(KeyCaptions.character(of: 0x7F2) == "ς")
        #expect(KeyCaptions.character(of: 0x6C1) == "а" && KeyCaptions.character(of: 0x6E1) == "А")
        #expect(KeyCaptions.character(of: 0x1A4) == nil, "no keysym there")
    }

    @Test("a dead key's accent goes on the next letter, as the application shows it (the dead key alone showed nothing and the letter bare)")
    func deadKeysAccentTheNextLetter() {
        var captions = KeyCaptions()
        let presses: [UInt32] = [0x63, 0xFE52, 0x65, 0x74, 0xFE57, 0x75, 0xFE51, 0x20]  // c ^ e t ¨ u ´ space
        for (index, keysym) in presses.enumerated() {
            captions.press(KeyPress(keysym: keysym), at: MediaTime(seconds: 0.1 * Double(index)))
        }
        #expect(captions.caption(at: MediaTime(seconds: 1))?.text == "cêtü´")
    }

    @Test("the caption font draws accented letters from their letter and marks, and a character it lacks as a box, never as '?'")
    func theFontDrawsAccentsAndABoxForWhatItLacks() {
        for character in "éèàüñçőžÉÀÜÇÅåŁłßæø" {
            #expect(BitmapFont.has(character), "\(character)")
            #expect(BitmapFont.glyph(character) != BitmapFont.glyph("?"), "\(character) is not '?'")
            #expect(BitmapFont.glyph(character) != BitmapFont.missing, "\(character) is not the box")
        }
        // Every letter of Latin-1 and Latin Extended-A (Western, Central European, Turkish…).
        let letters = (0xC0...0x17F).compactMap(Unicode.Scalar.init).filter { $0.properties.isAlphabetic && $0.value != 0x138 && $0.value != 0x149 }
        let lacking = letters.filter { !BitmapFont.has(Character($0)) }
        #expect(lacking.count <= 7, "letters drawn as a box (ĳ, ŀ, ŋ, ſ and their capitals may be): \(String(String.UnicodeScalarView(lacking)))")
        // An accent over a letter stands clear of the plain letter's dots and differs by accent.
        let e = BitmapFont.glyph("e"), acute = BitmapFont.glyph("é"), grave = BitmapFont.glyph("è")
        #expect(acute.top == 0 && Array(acute.rows.suffix(5)) == Array(e.rows.suffix(5)) && acute != grave)
        let capital = BitmapFont.glyph("É")
        #expect(capital.top == -2 && Array(capital.rows.suffix(7)) == BitmapFont.glyph("E").rows, "marks over a capital go above the cell")
        #expect(BitmapFont.glyph("ç").rows.count == 9, "a cedilla goes below the cell")
        #expect(BitmapFont.glyph("日") == BitmapFont.missing && !BitmapFont.has("日"))
        #expect(BitmapFont.glyph("?") != BitmapFont.missing)
    }
}
