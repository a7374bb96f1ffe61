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

    static func machine(limit: MediaTime? = nil, audio: Bool = true, frameMode: FrameMode = .constant,
                        holdsAudio: Bool = false, pausesAtLimit: Bool = false) -> RecordingMachine {
        RecordingMachine(configuration: .init(frameRate: rate, frameMode: frameMode, videoSource: video, audioInputs: audio ? [mic: 0] : [:],
                                              limit: limit, holdsAudioAheadOfVideo: holdsAudio, pausesAtLimit: pausesAtLimit))
    }

    /// Frame `n` showing picture `picture` (equal numbers: equal pixels, as a source says).
    static func frame(_ n: Int64, picture: UInt64) throws -> SourcedSample {
        var sample = try frame(n)
        guard case .video(var frame) = sample.sample else { return sample }
        frame.identity = PictureIdentity(id: 1_000_000 + picture, base: nil, changedRows: [])
        sample = SourcedSample(source: video, kind: .video, sample: .video(frame))
        return sample
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

    /// Content mode writes a picture when it changes: a repeat is left out (accounted for, not
    /// lost), the last one is written where its interval ends (the pause) and where the
    /// recording ends, so the file lasts as long as it was recorded; a repeat at a slot where
    /// the encoder makes a keyframe is written.
    @Test func contentModeLeavesRepeatsOutAndWritesTheLastWhereItsIntervalEnds() throws {
        var m = Self.machine(audio: false, frameMode: .content)
        var said: [String] = []
        // Pictures: 0–9 the same, 10–19 another; a pause at 20, resumed at 30; 30–39 the same.
        for n in Int64(0)..<40 {
            if n == 20 { _ = m.pause(at: Self.rate.time(ofFrame: 20)) }
            if n == 30 { _ = m.resume(at: Self.rate.time(ofFrame: 30)) }
            said += Self.describe(m.take(try Self.frame(n, picture: n < 10 ? 1 : n < 20 ? 2 : 3), keyframeDue: { $0 == 25 }))
        }
        said += Self.describe(m.finish(keyframeDue: { _ in false }))
        let videos = said.filter { $0.hasPrefix("v") }
        // Slots: 0 (the first picture), 10 (it changed), 19 (the repeat written where its
        // interval ends), 20 (the next interval's first: frame 30), 25 (a keyframe is due),
        // 29 (the repeat written where the recording ends).
        #expect(videos == ["v0.000", "v0.333", "v0.633", "v0.667", "v0.833", "v0.967"], "\(said)")
        #expect(said.firstIndex(of: "v0.633")! < said.firstIndex(of: "pause0@0.667")!, "the repeat before its pause: \(said)")
        #expect(m.droppedFrames == 0, "left out is not lost")
        #expect(m.recordedDuration == MediaTime(seconds: 1), "the file lasts the 30 slots recorded")
    }

    /// Variable rate keeps one picture a second when nothing changes (players and seeking need
    /// them), and leaves the other repeats out.
    @Test func variableRateKeepsAPictureASecondOfAStillScreen() throws {
        var m = Self.machine(audio: false, frameMode: .variable)
        var said: [String] = []
        for n in Int64(0)..<90 { said += Self.describe(m.take(try Self.frame(n, picture: 7), keyframeDue: { _ in false })) }
        said += Self.describe(m.finish(keyframeDue: { _ in false }))
        let times = said.filter { $0.hasPrefix("v") }.compactMap { Double($0.dropFirst()) }
        let gaps = zip(times, times.dropFirst()).map { $1 - $0 }
        #expect(times.first == 0 && abs((times.last ?? 0) - 89.0 / 30) < 0.001, "from the first slot to the last: \(times)")
        #expect(times.count >= 3 && times.count <= 5, "about one a second: \(times)")
        #expect(gaps.allSatisfy { $0 <= 1.0 + 0.001 }, "never more than a second apart: \(gaps)")
        #expect(m.droppedFrames == 0)
    }

    /// A take that pauses at its limit (a camera recorder): frames past it are not given, the
    /// machine pauses there and says the pause reached; time handed back (an undo) lets a
    /// resume record on, up to the limit moved on by it. Time handed back once the limit
    /// ended a recording changes nothing.
    @Test func aTakePausesAtItsLimitAndTimeHandedBackRecordsOn() throws {
        var m = Self.machine(limit: MediaTime(seconds: 0.5), audio: false, pausesAtLimit: true)
        var said: [String] = []
        for n in Int64(0)..<30 { said += Self.describe(m.take(try Self.frame(n), keyframeDue: { _ in false })) }
        #expect(said.filter { $0.hasPrefix("v") }.count == 15, "\(said)")
        #expect(said.contains("pause0@0.500"), "\(said)")
        #expect(m.pausedAtLimit && !m.reachedLimit)
        #expect(m.recordedDuration == MediaTime(seconds: 0.5))
        // An undo gives 0.2 s back; the app resumes.
        m.handBack(MediaTime(seconds: 0.2))
        #expect(m.resume(at: Self.rate.time(ofFrame: 40)) != nil)
        #expect(!m.pausedAtLimit)
        var after: [String] = []
        for n in Int64(40)..<60 { after += Self.describe(m.take(try Self.frame(n), keyframeDue: { _ in false })) }
        let videos = after.filter { $0.hasPrefix("v") }
        #expect(videos == (15..<21).map { String(format: "v%.3f", Double($0) / 30) }, "six more slots, to 0.7 s: \(after)")
        #expect(after.contains("begin1@0.500") && after.contains("pause1@0.700"), "\(after)")

        var ended = Self.machine(limit: MediaTime(seconds: 0.5), audio: false)
        for n in Int64(0)..<30 { _ = ended.take(try Self.frame(n), keyframeDue: { _ in false }) }
        #expect(ended.reachedLimit)
        ended.handBack(MediaTime(seconds: 1))
        #expect(ended.configuration.limit == MediaTime(seconds: 0.5), "a recording that ended at its limit stays ended")
    }

    /// Under a size limit, audio ahead of the video waits for it (at most 3 s), and goes with
    /// the frames that reach its time; a recording that ends at its size leaves the held audio
    /// out (both tracks end together).
    @Test func audioAheadOfTheVideoWaitsForItUnderASizeLimit() throws {
        var m = Self.machine(holdsAudio: true)
        _ = m.take(try Self.frame(0), keyframeDue: { _ in false })
        // A second of sound from 0.2 s arrives while the video is at its first frame.
        let held = Self.describe(m.take(Self.audio(from: 0.2, frames: 48_000), keyframeDue: { _ in false }))
        #expect(held.filter { $0.hasPrefix("a") }.isEmpty, "held for the video: \(held)")
        var said: [String] = []
        for n in Int64(1)..<45 { said += Self.describe(m.take(try Self.frame(n), keyframeDue: { _ in false })) }
        #expect(said.contains { $0.hasPrefix("a") }, "released once the video reached it: \(said)")
        // Then more sound, and the recording ends at its size: what is held is left out.
        _ = m.take(Self.audio(from: 1.2, frames: 48_000), keyframeDue: { _ in false })
        m.endEarly()
        let end = Self.describe(m.finish(keyframeDue: { _ in false }))
        #expect(!end.contains { $0.hasPrefix("a") }, "the sound past the video's end is left out: \(end)")

        // Never more than 3 s held: a video that stalls does not hold the sound for ever.
        var stalled = Self.machine(holdsAudio: true)
        _ = stalled.take(try Self.frame(0), keyframeDue: { _ in false })
        var given: [String] = []
        for second in 0..<5 { given += Self.describe(stalled.take(Self.audio(from: Double(second) + 0.1, frames: 48_000), keyframeDue: { _ in false })) }
        #expect(given.filter { $0.hasPrefix("a") }.count >= 2, "past 3 s held, the oldest goes: \(given)")
    }

    /// A microphone moved 2 s later (an audio lead): its sound, ahead of the video, waits for
    /// the frames; another input's sound that is not ahead goes on meanwhile; at the end the
    /// sound past the last picture is left out, a buffer across it cut there, so that a stop
    /// ends both tracks together (the last 2 s of the moved sound ran on past the video).
    @Test func soundMovedLaterWaitsForThePicturesAndEndsWithThem() throws {
        let app = SourceID(3)
        var m = RecordingMachine(configuration: .init(frameRate: Self.rate, videoSource: Self.video, audioInputs: [Self.mic: 0, app: 1],
                                                      audioLead: MediaTime(seconds: 2)))
        func appSound(from seconds: Double) -> SourcedSample {
            SourcedSample(source: app, kind: .audio, sample: .audio(.silence(format: Self.format, frameCount: 4_800, at: MediaTime(seconds: seconds))))
        }
        var given: [RecordingMachine.Action] = []
        _ = m.take(try Self.frame(0), keyframeDue: { _ in false })
        // Each 0.1 s: three frames, the application's 0.1 s of sound and the microphone's, 2 s later.
        for step in 0..<30 {
            let t = Double(step) / 10
            for n in Int64(3 * step + 1)...Int64(3 * step + 3) { given += m.take(try Self.frame(n), keyframeDue: { _ in false }) }
            given += m.take(Self.audio(from: t + 2, frames: 4_800), keyframeDue: { _ in false })
            given += m.take(appSound(from: t), keyframeDue: { _ in false })
        }
        func sound(_ actions: [RecordingMachine.Action], input: Int) -> [(MediaTime, MediaTime)] {
            actions.compactMap { if case .audio(let b, let i) = $0, i == input { (b.presentationTime, b.endTime) } else { nil } }
        }
        // The video is at 3.0 s: the application's sound has gone with it, the microphone's up to it.
        #expect(sound(given, input: 1).last?.1 == MediaTime(seconds: 3), "\(Self.describe(given))")
        #expect(sound(given, input: 0).last?.1 == MediaTime(seconds: 3), "\(Self.describe(given))")
        // The stop: the last frame is 90 (3.0 s), the video ends at 3.033 s; the microphone's
        // sound, given to 4.9 s, is cut there.
        let end = m.finish(keyframeDue: { _ in false })
        let mic = sound(given + end, input: 0)
        let videoEnd = Self.rate.time(ofFrame: 91)
        let last = try #require(mic.last?.1)
        #expect(abs((last - videoEnd).seconds) < 1.0 / 48_000, "the microphone ends with the pictures: \(last.seconds) s, video \(videoEnd.seconds) s")
        #expect(zip(mic, mic.dropFirst()).allSatisfy { $0.1 == $1.0 }, "nothing of it before the end is left out")
    }
}
