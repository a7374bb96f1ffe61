import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// The presenter overlays through the public API: a session on a manual clock, a recorded
/// event sequence on one of its inputs' connections; the ring is in the pictures from the
/// press's time for half a second, and not in any other.
@Suite struct PresenterOverlayTests {
    @Test func aRecordedPressDrawsARingInThePicturesOfItsHalfSecondOnly() async throws {
        let clock = ManualClock()
        let session = CaptureSession(clock: clock)
        let camera = TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(10), beeps: .never, background: .blue, name: "camera")
        try session.addInput(camera)
        let press = clock.now() + MediaTime(seconds: 1)
        try #require(session.connection(for: camera)).setPresenterOverlays(
            PresenterOverlays(showsMouseClicks: true), events: RecordedInputEvents([InputEvent(time: press, .buttonPressed(.left, x: 100, y: 120))]))
        // Around the press, the ring's yellow has less blue than the pattern's blue there (Cb 240), less and less as it fades.
        let seen = Mutex<[(time: Double, yellow: Bool)]>([])
        try session.addOutput(SampleHandlerOutput { sample, _ in
            guard case .video(let frame) = sample, frame.format == .yuv420p else { return }
            let yellow = frame.withUnsafePlane(1) { bytes, stride in
                (44...56).contains { x in (52...68).contains { y in bytes[y * stride + x] < 230 } }
            }
            seen.withLock { $0.append((frame.presentationTime.seconds, yellow)) }
        })
        try await session.start()
        while seen.withLock({ $0.count }) < 20 { try await Task.sleep(for: .milliseconds(5)) }
        await session.stop()
        let pictures = seen.withLock { $0 }
        #expect(pictures.contains { $0.yellow }, "\(pictures)")
        for picture in pictures {
            #expect(picture.yellow == (picture.time >= 1 && picture.time < 1.5), "at \(picture.time) s: \(picture.yellow ? "a ring" : "none")")
        }
    }

    /// Ctrl+Alt+K hides the captions: the person typing sees their screen, not the recording,
    /// so the session says when the chord hid them and when it showed them again, in the order
    /// pressed, at the pictures that follow each press (issue 31).
    @Test func theHideChordIsSaidEachTimeItIsPressed() async throws {
        let clock = ManualClock()
        let session = CaptureSession(clock: clock)
        let camera = TestPatternSource(size: PixelSize(width: 320, height: 240), frameRate: FrameRate(10), beeps: .never, name: "camera")
        try session.addInput(camera)
        let start = clock.now()
        func key(_ seconds: Double, _ keysym: UInt32, _ modifiers: KeyModifiers = []) -> InputEvent {
            InputEvent(time: start + MediaTime(seconds: seconds), .keyPressed(KeyPress(keysym: keysym, modifiers: modifiers)))
        }
        let chord: KeyModifiers = [.control, .alt]
        try #require(session.connection(for: camera)).setPresenterOverlays(
            PresenterOverlays(showsKeys: true),
            events: RecordedInputEvents([key(0.3, 0x61), key(0.5, 0x6B, chord), key(0.8, 0x62), key(1.2, 0x4B, chord.union(.shift)), key(1.4, 0x6B)]))
        let pictures = Mutex(0)
        try session.addOutput(SampleHandlerOutput { sample, _ in
            if case .video = sample { pictures.withLock { $0 += 1 } }
        })
        let said = Mutex<[String]>([])
        let listening = Task {
            for await event in session.events {
                switch event {
                case .keyCaptionsHidden(let source): said.withLock { $0.append("hidden \(source)") }
                case .keyCaptionsShown(let source): said.withLock { $0.append("shown \(source)") }
                default: break
                }
            }
        }
        defer { listening.cancel() }
        try await session.start()
        while pictures.withLock({ $0 }) < 20 { try await Task.sleep(for: .milliseconds(5)) }
        await session.stop()
        // The events come on the session's stream, which goes on after a stop (a session starts again).
        let end = Date().addingTimeInterval(5)
        while said.withLock({ $0.count }) < 2 && Date() < end { try await Task.sleep(for: .milliseconds(10)) }
        #expect(said.withLock { $0 } == ["hidden camera", "shown camera"], "a plain k (1.4 s) is no chord")
    }
}
