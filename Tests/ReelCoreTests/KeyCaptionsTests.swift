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
}
