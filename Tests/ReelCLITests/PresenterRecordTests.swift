import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// `reel record --show-clicks --show-keys --follow-cursor` on a real X server (Xvfb) driven by
/// xdotool: what the XInput2 events say is in the recorded file's pictures after them, not
/// before, and gone again after its fade.
@Suite(.serialized, .tags(.realTime)) struct PresenterRecordTests {
    static let size = PixelSize(width: 640, height: 360)

    /// Runs `reel record --json ARGS`; once it says it started, calls each step after its delay
    /// (seconds from the start) and waits for reel to finish.
    func record(_ args: [String], steps: [(Double, () throws -> Void)],
                started: (Int32) -> Void = { _ in }) async throws -> (status: Int32, stderr: String, stdout: String) {
        let process = Process()
        process.executableURL = ReelBinary.url
        process.arguments = ["record", "--json"] + args
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let printed = Mutex("")
        out.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            printed.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
        started(process.processIdentifier)
        let deadline = Date(timeIntervalSinceNow: 30)
        while !printed.withLock({ $0.contains("\"started\"") }), process.isRunning, Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        var elapsed = 0.0
        for (at, step) in steps {
            try await Task.sleep(for: .milliseconds(Int((at - elapsed) * 1000)))
            elapsed = at
            try step()
        }
        while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        if process.isRunning { process.terminate(); Issue.record("reel did not finish") }
        process.waitUntilExit()
        out.fileHandleForReading.readabilityHandler = nil
        return (process.terminationStatus, String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self), printed.withLock { $0 })
    }

    func xdotool(_ display: String, _ arguments: [String]) throws {
        let run = try Subprocess.run(["xdotool"] + arguments, environment: ["DISPLAY": display])
        #expect(run.status == 0, "xdotool \(arguments): \(run.stderr)")
    }

    /// The positions in `frame` (RGB rows) where `matches` holds, within `area`.
    static func pixels(_ frame: [UInt8], in area: PixelRect? = nil, _ matches: (UInt8, UInt8, UInt8) -> Bool) -> [(x: Int, y: Int)] {
        let a = area ?? PixelRect(x: 0, y: 0, width: size.width, height: size.height)
        var found: [(Int, Int)] = []
        for y in a.y..<(a.y + a.height) {
            for x in a.x..<(a.x + a.width) {
                let i = (y * size.width + x) * 3
                if matches(frame[i], frame[i + 1], frame[i + 2]) { found.append((x, y)) }
            }
        }
        return found
    }

    static func isYellow(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> Bool { r > 170 && g > 120 && b < 90 }
    static func isWhite(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> Bool { r > 200 && g > 200 && b > 200 }
    static func isGrey(_ frame: [UInt8]) -> Bool { abs(Int(frame[(20 * size.width + 20) * 3]) - 100) < 25 }

    @Test("keys typed while the recording is paused never show, after the resume either (a password typed in a pause showed with the next key)")
    func keysTypedWhilePausedNeverShow() async throws {
        let xvfb = try XvfbServer(size: Self.size)
        let painter = try ScreenPainter(display: xvfb.display)
        painter.fill(rect: PixelRect(x: 0, y: 0, width: 640, height: 360), red: 100, green: 100, blue: 100)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("paused-keys.mp4")
        let reel = Mutex<Int32>(0)
        // SIGUSR1 pauses and resumes; "secretword" is typed in the pause.
        let r = try await record(["--screen=\(xvfb.display)", "--no-cursor", "--show-keys", "--preset", "ultrafast",
                                  "--duration", "4", "-o", url.path], steps: [
            (0.5, { try xdotool(xvfb.display, ["type", "--delay", "50", "ab"]) }),
            (1.2, { kill(reel.withLock { $0 }, SIGUSR1) }),
            (1.5, { try xdotool(xvfb.display, ["type", "--delay", "50", "secretword"]) }),
            (2.7, { kill(reel.withLock { $0 }, SIGUSR1) }),
            (3.0, { try xdotool(xvfb.display, ["type", "--delay", "50", "c"]) }),
        ], started: { pid in reel.withLock { $0 = pid } })
        #expect(r.status == 0, "\(r.stderr)")
        let frames = try MediaProbe.decodeRGB(url, width: Self.size.width, height: Self.size.height)
        let area = PresenterStage.captionLayout("absecretwordc", in: Self.size).box
        /// How wide the caption's letters are in a picture.
        func width(_ frame: [UInt8]) -> Int {
            let xs = Self.pixels(frame, in: area, Self.isWhite).map(\.x)
            return (xs.max() ?? 0) - (xs.min() ?? 0)
        }
        let widths = frames.map(width)
        let ab = widths.prefix(36).max() ?? 0
        #expect(ab > 5, "\"ab\" shows before the pause: \(widths)")
        #expect(widths.dropFirst(36).contains { $0 > 0 }, "\"c\" shows after the resume: \(widths)")
        #expect(widths.allSatisfy { $0 <= ab + 2 }, "no caption wider than \"ab\" (the secret would be): \(widths)")
    }

    @Test("Ctrl+Alt+K is said when it hides the captions and when it shows them again (the person typing sees the screen, not the recording, and was told nothing)")
    func theHideChordIsSaid() async throws {
        let xvfb = try XvfbServer(size: Self.size)
        let painter = try ScreenPainter(display: xvfb.display)
        painter.fill(rect: PixelRect(x: 0, y: 0, width: 640, height: 360), red: 100, green: 100, blue: 100)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("hidden-keys.mp4")
        let r = try await record(["--screen=\(xvfb.display)", "--no-cursor", "--show-keys", "--preset", "ultrafast",
                                  "--duration", "3", "-o", url.path], steps: [
            (0.5, { try xdotool(xvfb.display, ["key", "ctrl+alt+k"]) }),
            (1.0, { try xdotool(xvfb.display, ["type", "--delay", "50", "secret"]) }),
            (1.8, { try xdotool(xvfb.display, ["key", "ctrl+alt+k"]) }),
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let said = r.stdout.split(separator: "\n").compactMap { line -> String? in
            line.contains("\"keyCaptionsHidden\"") ? "hidden" : line.contains("\"keyCaptionsShown\"") ? "shown" : nil
        }
        #expect(said == ["hidden", "shown"], "\(r.stdout)")
        let frames = try MediaProbe.decodeRGB(url, width: Self.size.width, height: Self.size.height)
        let area = PresenterStage.captionLayout("secret", in: Self.size).box
        #expect(frames.allSatisfy { Self.pixels($0, in: area, Self.isWhite).isEmpty }, "nothing typed while hidden is drawn")
    }

    @Test("a click shows a ring around its point and typed keys a caption, in the pictures after them only, gone after their fade")
    func clicksAndKeys() async throws {
        let xvfb = try XvfbServer(size: Self.size)
        let painter = try ScreenPainter(display: xvfb.display)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("presenter.mp4")
        let click = (x: 200, y: 150)
        // The screen turns grey before the click: pictures still black were taken before it.
        let r = try await record(["--screen=\(xvfb.display)", "--no-cursor", "--show-clicks", "--show-keys", "--preset", "ultrafast",
                                  "--duration", "8", "-o", url.path], steps: [
            (0.8, { painter.fill(rect: PixelRect(x: 0, y: 0, width: 640, height: 360), red: 100, green: 100, blue: 100) }),
            (1.3, { try xdotool(xvfb.display, ["mousemove", "\(click.x)", "\(click.y)", "click", "1"]) }),
            (2.3, { try xdotool(xvfb.display, ["type", "--delay", "50", "hi"]) }),
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("passwords too"), "the warning that everything typed is shown: \(r.stderr)")
        let frames = try MediaProbe.decodeRGB(url, width: Self.size.width, height: Self.size.height)
        #expect(frames.count >= 200, "about 8 s at 30 fps: \(frames.count)")
        let captionArea = PresenterStage.captionLayout("hi", in: Self.size).box
        let firstGrey = try #require(frames.firstIndex(where: Self.isGrey), "the screen turned grey")
        #expect(firstGrey >= 5, "black pictures before the paint: \(firstGrey)")
        for index in 0..<firstGrey {
            #expect(Self.pixels(frames[index], Self.isYellow).isEmpty, "no ring before the click: frame \(index)")
            #expect(Self.pixels(frames[index], in: captionArea, Self.isWhite).isEmpty, "no caption before typing: frame \(index)")
        }
        let ringFrames = frames.indices.filter { !Self.pixels(frames[$0], Self.isYellow).isEmpty }
        #expect(!ringFrames.isEmpty, "a ring in some picture")
        for index in ringFrames {
            for point in Self.pixels(frames[index], Self.isYellow) {
                let distance = (Double((point.x - click.x) * (point.x - click.x) + (point.y - click.y) * (point.y - click.y))).squareRoot()
                #expect(distance >= 3 && distance <= 30, "frame \(index): yellow \(distance) px from the click, not on a ring around it")
            }
            #expect(!Self.isYellow(frames[index][(click.y * 640 + click.x) * 3], frames[index][(click.y * 640 + click.x) * 3 + 1],
                                   frames[index][(click.y * 640 + click.x) * 3 + 2]), "a ring, its middle left as it was")
        }
        let captionFrames = frames.indices.filter { Self.pixels(frames[$0], in: captionArea, Self.isWhite).count > 10 }
        #expect(!captionFrames.isEmpty, "the typed keys in the caption box in some picture")
        #expect(captionFrames.allSatisfy { $0 > (ringFrames.first ?? 0) }, "typed after the click")
        // Both gone within 2.5 s of the last key; the recording goes on for 3 s more.
        for index in (frames.count - 20)..<frames.count {
            #expect(Self.pixels(frames[index], Self.isYellow).isEmpty && Self.pixels(frames[index], in: captionArea, Self.isWhite).isEmpty,
                    "gone by frame \(index) of \(frames.count)")
        }
    }

    @Test("--follow-cursor zooms in on the pointer, centred near it, without jumps between pictures, and back out once it rests")
    func followsThePointer() async throws {
        let xvfb = try XvfbServer(size: Self.size)
        let painter = try ScreenPainter(display: xvfb.display)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("follow.mp4")
        let target = (x: 480, y: 120)
        painter.fill(rect: PixelRect(x: target.x - 20, y: target.y - 20, width: 40, height: 40), red: 230, green: 20, blue: 20)
        var steps: [(Double, () throws -> Void)] = []
        for i in 0..<12 {
            steps.append((0.5 + Double(i) * 0.25, { try xdotool(xvfb.display, ["mousemove", "\(target.x + i % 2)", "\(target.y)"]) }))
        }
        let r = try await record(["--screen=\(xvfb.display)", "--no-cursor", "--follow-cursor", "--zoom", "2", "--preset", "ultrafast",
                                  "--duration", "7", "-o", url.path], steps: steps)
        #expect(r.status == 0, "\(r.stderr)")
        let frames = try MediaProbe.decodeRGB(url, width: Self.size.width, height: Self.size.height)
        let red = frames.map { Self.pixels($0) { r, g, b in r > 150 && g < 90 && b < 90 } }
        let plain = 40 * 40
        let zoomedIn = red.indices.filter { red[$0].count > 3 * plain }
        #expect(!zoomedIn.isEmpty, "zoomed in on the pointer in some picture: most red \(red.map(\.count).max() ?? 0) px")
        func centre(_ points: [(x: Int, y: Int)]) -> (x: Double, y: Double) {
            (Double(points.map(\.x).reduce(0, +)) / Double(points.count), Double(points.map(\.y).reduce(0, +)) / Double(points.count))
        }
        for index in zoomedIn where red[index].count > Int(3.5 * Double(plain)) {
            let c = centre(red[index])
            #expect(abs(c.x - 320) <= 24 && abs(c.y - 180) <= 24, "frame \(index): the pointer's square at \(c), not near the middle")
        }
        for index in red.indices.dropFirst() where !red[index].isEmpty && !red[index - 1].isEmpty {
            let a = centre(red[index - 1]), b = centre(red[index])
            #expect(abs(a.x - b.x) <= 80 && abs(a.y - b.y) <= 80, "a jump from frame \(index - 1) to \(index): \(a) to \(b)")
        }
        let last = try #require(red.last)
        #expect(last.count < 2 * plain && abs(centre(last).x - Double(target.x)) <= 6, "back out once the pointer rested: \(last.count) red px")
    }

    @Test("letters typed beyond ASCII show in the caption as typed: é drawn with its accent, 日 (which the font lacks) as a box (é was left out, or drawn as '?')")
    func accentedLettersShowAsTyped() async throws {
        let xvfb = try XvfbServer(size: Self.size)
        let painter = try ScreenPainter(display: xvfb.display)
        painter.fill(rect: PixelRect(x: 0, y: 0, width: 640, height: 360), red: 100, green: 100, blue: 100)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("accents.mp4")
        // xdotool types a character no key has by binding a spare key to it for one stroke.
        let r = try await record(["--screen=\(xvfb.display)", "--no-cursor", "--show-keys", "--preset", "ultrafast",
                                  "--duration", "3", "-o", url.path], steps: [
            (0.8, { try xdotool(xvfb.display, ["type", "--delay", "150", "é日"]) }),
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let frames = try MediaProbe.decodeRGB(url, width: Self.size.width, height: Self.size.height)
        let layout = PresenterStage.captionLayout("é日", in: Self.size)
        let lit = frames.map { Self.pixels($0, in: layout.box, Self.isWhite).count }
        let best = try #require(lit.indices.max { lit[$0] < lit[$1] })
        #expect(lit[best] > 20, "a caption of two characters: white pixels per picture \(lit)")
        /// Which of `candidates` the `index`th character of the caption looks like, and by how
        /// many dots it differs from it.
        func read(_ index: Int, among candidates: [(String, BitmapFont.Glyph)]) -> (String, Int) {
            let scale = layout.scale
            let left = layout.box.x + 3 * scale + index * PictureMarks.advance(scale: scale), top = layout.box.y + 3 * scale
            func isDot(_ row: Int, _ column: Int) -> Bool {
                let x = left + column * scale, y = top + row * scale
                var sum = 0
                for dy in 0..<scale { for dx in 0..<scale { sum += Int(frames[best][((y + dy) * Self.size.width + x + dx) * 3]) } }
                return sum / (scale * scale) > 150
            }
            return candidates.map { name, glyph in
                var differences = 0
                for row in -2...8 {
                    let bits = row >= glyph.top && row < glyph.top + glyph.rows.count ? glyph.rows[row - glyph.top] : 0
                    for column in 0..<5 where isDot(row, column) != (bits & (1 << (4 - column)) != 0) { differences += 1 }
                }
                return (name, differences)
            }.min { $0.1 < $1.1 }!
        }
        let glyphs = ["é", "è", "ê", "e", "?"].map { ($0, BitmapFont.glyph(Character($0))) } + [("box", BitmapFont.missing)]
        let first = read(0, among: glyphs), second = read(1, among: glyphs)
        #expect(first.0 == "é" && first.1 <= 3, "the first character reads as \(first)")
        #expect(second.0 == "box" && second.1 <= 3, "the second character reads as \(second)")
    }

    @Test("--show-clicks on a window draws the clicks that land on it, not those on a window covering it (a click on the window over it was drawn)")
    func clicksOnAWindowCoveringTheRecordedOneAreNotDrawn() async throws {
        let xvfb = try XvfbServer(size: Self.size)
        let painter = try ScreenPainter(display: xvfb.display)
        painter.openWindow(title: "Under", rect: PixelRect(x: 100, y: 100, width: 400, height: 200), red: 100, green: 100, blue: 100)
        painter.openWindow(title: "Over", rect: PixelRect(x: 150, y: 120, width: 300, height: 150), red: 200, green: 0, blue: 0)
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("covered.mp4")
        // One click on Over (where it covers Under), one on Under where nothing covers it.
        let covered = (x: 250, y: 200), open = (x: 480, y: 285)
        let r = try await record(["--screen=\(xvfb.display)", "--window=Under", "--no-cursor", "--show-clicks", "--preset", "ultrafast",
                                  "--duration", "3", "-o", url.path], steps: [
            (0.8, { try xdotool(xvfb.display, ["mousemove", "\(covered.x)", "\(covered.y)", "click", "1"]) }),
            (1.6, { try xdotool(xvfb.display, ["mousemove", "\(open.x)", "\(open.y)", "click", "1"]) }),
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let frames = try MediaProbe.decodeRGB(url, width: 400, height: 200)
        #expect(frames.count >= 60, "\(frames.count) pictures")
        /// Yellow (a left click's ring) within 30 px of (`x`, `y`) in the window, in any picture.
        func ringNear(_ x: Int, _ y: Int) -> Int {
            var found = 0
            for frame in frames {
                for dy in -30...30 {
                    for dx in -30...30 where x + dx >= 0 && x + dx < 400 && y + dy >= 0 && y + dy < 200 {
                        let i = ((y + dy) * 400 + x + dx) * 3
                        if Self.isYellow(frame[i], frame[i + 1], frame[i + 2]) { found += 1 }
                    }
                }
            }
            return found
        }
        #expect(ringNear(open.x - 100, open.y - 100) > 20, "the click on the window shows")
        #expect(ringNear(covered.x - 100, covered.y - 100) == 0, "the click on the window over it does not")
    }
}

