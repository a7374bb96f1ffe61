import Foundation
import Testing
@testable import ReelCore

/// The recorder's decisions as a value (`RecordingMachine`), without an encoder or a file:
/// samples in on a made-up timeline, actions out.
@Suite struct RecordingMachineTests {
    static let video = SourceID(1)
    static let mic = SourceID(2)
    static let rate = FrameRate(30)
    static let format = AudioFormat()

    static func frame(_ n: Int64, at seconds: Double? = nil) throws -> SourcedSample {
        let time = seconds.map { MediaTime(seconds: $0) } ?? rate.time(ofFrame: n)
        let frame = try VideoFrame(format: .yuv420p, size: PixelSize(width: 16, height: 16), presentationTime: time, sequenceNumber: n) { _, _, _ in }
        return SourcedSample(source: video, kind: .video, sample: .video(frame))
    }

    static func audio(from seconds: Double, frames: Int) -> SourcedSample {
        SourcedSample(source: mic, kind: .audio,
                      sample: .audio(.silence(format: format, frameCount: frames, at: MediaTime(seconds: seconds))))
    }

    static func machine(limit: MediaTime? = nil, audio: Bool = true) -> RecordingMachine {
        RecordingMachine(configuration: .init(frameRate: rate, videoSource: video, audioInputs: audio ? [mic: 0] : [:], limit: limit))
    }

    /// What the actions say, in order: `v<seconds>`, `a<start>+<duration>`, `pause<i>@<s>`, `begin<i>@<s>`.
    static func describe(_ actions: [RecordingMachine.Action]) -> [String] {
        func s(_ t: MediaTime) -> String { String(format: "%.3f", t.seconds) }
        return actions.map {
            switch $0 {
            case .video(_, let at): "v\(s(at))"
            case .audio(let buffer, _): "a\(s(buffer.presentationTime))+\(s(buffer.duration))"
            case .pauseReached(let interval, let at): "pause\(interval)@\(s(at))"
            case .intervalBegins(let interval, let at): "begin\(interval)@\(s(at))"
            }
        }
    }

    /// The recording begins with its picture: audio before the first frame waits for it, and
    /// only what lies after the frame's time is recorded, from zero.
    @Test func audioBeforeTheFirstFrameWaitsAndIsCutToIt() throws {
        var m = Self.machine()
        #expect(m.take(Self.audio(from: 10.0, frames: 24_000), keyframeDue: { _ in false }).isEmpty)
        let actions = Self.describe(m.take(try Self.frame(0, at: 10.2), keyframeDue: { _ in false }))
        #expect(actions == ["begin0@0.000", "a0.000+0.300", "v0.000"], "\(actions)")
        #expect(m.recordedDuration == Self.rate.frameDuration)
    }

    /// A pause takes the frames and the sound in it out; the pause is said reached when the
    /// video passes it, the next interval begins where the recorded time stood, and the frames
    /// after it carry on the grid without a gap.
    @Test func aPauseIsReachedCutAndTheNextIntervalCarriesOn() throws {
        var m = Self.machine()
        var said: [String] = []
        for n in Int64(0)..<30 {
            if n == 15 { _ = m.pause(at: Self.rate.time(ofFrame: 15)) }
            if n == 24 { _ = m.resume(at: Self.rate.time(ofFrame: 24)) }
            said += Self.describe(m.take(try Self.frame(n), keyframeDue: { _ in false }))
        }
        let videos = said.filter { $0.hasPrefix("v") }
        #expect(videos.count == 21, "15 frames before the pause, 6 after: \(videos)")
        #expect(videos == (0..<21).map { String(format: "v%.3f", Double($0) / 30) }, "one grid, the pause taken out")
        let pause = try #require(said.firstIndex(of: "pause0@0.500"), "\(said)")
        let begin = try #require(said.firstIndex(of: "begin1@0.500"), "\(said)")
        #expect(pause < begin && begin < said.firstIndex(of: "v0.500")!)
        // Sound across the pause: cut at it, what lies in it left out.
        var audio = Self.describe(m.take(Self.audio(from: 0.4, frames: 24_000), keyframeDue: { _ in false }))
        audio = audio.filter { $0.hasPrefix("a") }
        #expect(audio == ["a0.400+0.100", "a0.500+0.100"], "0.4–0.5 s, then 0.8–0.9 s recorded from 0.5: \(audio)")
        #expect(m.droppedFrames == 0)
    }

    /// Frames a source numbered but that never came are counted as dropped.
    @Test func framesMissingBetweenThoseWrittenAreCounted() throws {
        var m = Self.machine(audio: false)
        for n: Int64 in [0, 1, 2, 5, 6, 9] { _ = m.take(try Self.frame(n), keyframeDue: { _ in false }) }
        #expect(m.droppedFrames == 4)
        #expect(m.writtenRuns().map(\.count) == [3, 2, 1])
    }

    /// Frames lost right after a resume (a recorder that fell behind) are counted as dropped,
    /// though the frame before them was written before the pause; the frames of the pause,
    /// numbered but not recorded, are not.
    @Test func framesLostAtAResumeAreCounted() throws {
        var m = Self.machine(audio: false)
        _ = m.pause(at: Self.rate.time(ofFrame: 10))
        _ = m.resume(at: Self.rate.time(ofFrame: 40))
        // 0–9 written, 10–39 paused, 40–44 lost, 45–49 written.
        for n in Array(Int64(0)..<40) + Array(Int64(45)..<50) { _ = m.take(try Self.frame(n), keyframeDue: { _ in false }) }
        #expect(m.droppedFrames == 5)
        let actions = m.finish(keyframeDue: { _ in false })
        #expect(actions.isEmpty)
        #expect(m.droppedFrames == 5, "the recording ends at its last frame")
    }

    /// An interval that its sound began but whose frames were all lost (in clip mode, a clip
    /// that would have had no picture and been dropped with its sound) is given the picture
    /// written last at its first slot, before its pause is said reached; its slots count as
    /// lost, and its sound is given.
    @Test func anIntervalWhoseFramesWereAllLostKeepsItsSoundAndAPicture() throws {
        var m = Self.machine()
        var said: [String] = []
        for n in Int64(0)..<10 { said += Self.describe(m.take(try Self.frame(n), keyframeDue: { _ in false })) }
        _ = m.pause(at: Self.rate.time(ofFrame: 10))
        _ = m.resume(at: Self.rate.time(ofFrame: 40))
        _ = m.pause(at: Self.rate.time(ofFrame: 49))
        _ = m.resume(at: Self.rate.time(ofFrame: 70))
        // Frames 10–39 paused; 40–48 (the second interval) lost; then its sound, late; then 70 on.
        said += Self.describe(m.take(try Self.frame(69), keyframeDue: { _ in false }))
        said += Self.describe(m.take(Self.audio(from: 40.0 / 30, frames: 14_400), keyframeDue: { _ in false }))
        for n in Int64(70)..<75 { said += Self.describe(m.take(try Self.frame(n), keyframeDue: { _ in false })) }
        let begin1 = try #require(said.firstIndex(of: "begin1@0.333"), "\(said)")
        let filler = try #require(said.firstIndex(of: "v0.333"), "the last picture at the interval's first slot: \(said)")
        let pause1 = try #require(said.firstIndex(of: "pause1@0.633"), "\(said)")
        #expect(begin1 < filler && filler < pause1)
        #expect(said.contains("a0.333+0.300"), "the interval's sound: \(said)")
        #expect(said.filter { $0.hasPrefix("v") }.count == 10 + 1 + 5)
        #expect(m.droppedFrames == 9, "the interval's nine slots")
    }

    /// A stop in an interval that sound began and no frame reached gives it the last picture
    /// too, and counts its slots as lost.
    @Test func aStopInAnIntervalWithoutFramesGivesItAPicture() throws {
        var m = Self.machine()
        for n in Int64(0)..<10 { _ = m.take(try Self.frame(n), keyframeDue: { _ in false }) }
        _ = m.pause(at: Self.rate.time(ofFrame: 10))
        _ = m.resume(at: Self.rate.time(ofFrame: 40))
        // Frames 10–39 paused, 40–49 lost; sound of 40–49 comes.
        let sound = Self.describe(m.take(Self.audio(from: 40.0 / 30, frames: 16_000), keyframeDue: { _ in false }))
        #expect(sound.contains("begin1@0.333"), "\(sound)")
        let end = Self.describe(m.finish(keyframeDue: { _ in false }))
        #expect(end == ["v0.333"], "\(end)")
        #expect(m.droppedFrames == 10, "\(m.droppedFrames)")
    }

    /// At the duration limit no frame and no sound past it is given, and the machine says the
    /// limit was reached.
    @Test func nothingPastTheLimitIsGiven() throws {
        var m = Self.machine(limit: MediaTime(seconds: 0.5))
        var said: [String] = []
        said += Self.describe(m.take(Self.audio(from: 0, frames: 48_000), keyframeDue: { _ in false }))
        for n in Int64(0)..<30 { said += Self.describe(m.take(try Self.frame(n), keyframeDue: { _ in false })) }
        #expect(said.filter { $0.hasPrefix("v") }.count == 15)
        #expect(said.filter { $0.hasPrefix("a") } == ["a0.000+0.500"], "\(said)")
        #expect(m.reachedLimit)
        #expect(m.recordedDuration == MediaTime(seconds: 0.5))
    }
}
