import Foundation
@testable import ReelLinux
import ReelCore
import Synchronization
import Testing

/// What a recording of chosen applications says when it records only digital silence (issue
/// 26, F10): the words, from the mixer's state of the chosen streams, and when they are said
/// (``ApplicationSilenceWatch``, fed buffers by hand). The real servers' side is
/// `MutedApplicationTests`.
@Suite struct ApplicationSilenceTests {
    static func stream(_ index: UInt32, _ name: String, muted: Bool = false, zero: Bool = false, module: Bool = false) -> PlayingStream {
        var stream = PlayingStream(index: index, applicationName: name, binary: "", processID: nil, sinkName: "reel-app-1-1", isModuleStream: module)
        stream.isMuted = muted
        stream.isAtVolumeZero = zero
        return stream
    }

    static let onlyA = ApplicationChoice(names: ["A"], excluding: false)

    @Test func theWordsNameWhatTheMixerDoes() throws {
        let muted = try #require(ApplicationSilenceWatch.words(streams: [Self.stream(1, "A", muted: true)], choice: Self.onlyA))
        #expect(muted.description == "'A' is muted in the mixer: every sample recorded of it is digital silence (exactly zero) "
            + "(unmute it, e.g. in pavucontrol: the mixer applies to the sound before it can be recorded, and reel leaves the mixer as the user set it)")
        // Muted and at volume 0 too: muted is what to undo first.
        let both = try #require(ApplicationSilenceWatch.words(streams: [Self.stream(1, "A", muted: true, zero: true)], choice: Self.onlyA))
        #expect(both.message.hasPrefix("'A' is muted in the mixer"), "\(both)")
        let zero = try #require(ApplicationSilenceWatch.words(streams: [Self.stream(1, "A", zero: true)], choice: Self.onlyA))
        #expect(zero.message.hasPrefix("'A' is at volume 0 in the mixer") && zero.hint?.hasPrefix("turn it up, e.g. in pavucontrol") == true, "\(zero)")
        // Turned down so far that nothing is left: said with its percentage.
        var faint = Self.stream(1, "A", zero: true)
        faint.volumePercent = 1
        let low = try #require(ApplicationSilenceWatch.words(streams: [faint], choice: Self.onlyA))
        #expect(low.message.hasPrefix("'A' is turned down to 1 % in the mixer (too low to leave any sample above zero)")
                && low.hint?.hasPrefix("turn it up, e.g. in pavucontrol") == true, "\(low)")
        let quiet = try #require(ApplicationSilenceWatch.words(streams: [Self.stream(1, "A")], choice: Self.onlyA))
        #expect(quiet.message.hasPrefix("'A' played only digital silence") && quiet.hint?.contains("pavucontrol") == false, "\(quiet)")
    }

    /// Several applications: each by what its streams are; an application one of whose streams
    /// is not muted played silence; others' streams and modules' (loopbacks) are not looked at;
    /// none of the chosen playing: nothing to say (the routing says that).
    @Test func eachApplicationIsSaidByAllItsStreams() throws {
        let choice = ApplicationChoice(names: ["A", "B", "C"], excluding: false)
        let streams = [Self.stream(1, "A", muted: true), Self.stream(2, "B", zero: true), Self.stream(3, "C", muted: true), Self.stream(4, "C"),
                       Self.stream(5, "D", muted: true), Self.stream(6, "", muted: true, module: true)]
        let words = try #require(ApplicationSilenceWatch.words(streams: streams, choice: choice))
        #expect(words.message == "'A' is muted in the mixer, and 'B' is at volume 0 in the mixer, and 'C' played only digital silence: every sample recorded of them is digital silence (exactly zero)")
        #expect(words.hint?.hasPrefix("unmute 'A', turn 'B' up, e.g. in pavucontrol") == true, "\(words)")
        #expect(ApplicationSilenceWatch.words(streams: [Self.stream(5, "D", muted: true)], choice: Self.onlyA) == nil)
        #expect(ApplicationSilenceWatch.words(streams: [], choice: ApplicationChoice(names: ["A"], excluding: true)) == nil)
        // Every application but A: D is one of them.
        let except = try #require(ApplicationSilenceWatch.words(streams: streams, choice: ApplicationChoice(names: ["A", "B", "C"], excluding: true)))
        #expect(except.message.hasPrefix("'D' is muted in the mixer"), "\(except)")
    }

    /// Buffers of 10 ms at 1 kHz (10 frames of f32 stereo), zero or not.
    static let format = AudioFormat(sampleFormat: .f32, sampleRate: 1000, channels: 2)
    static func buffer(_ sounds: Bool) -> AudioBuffer {
        let sample: Float = sounds ? 0.25 : 0
        let bytes = withUnsafeBytes(of: sample.bitPattern.littleEndian) { Array($0) }
        return AudioBuffer(format: format, presentationTime: .zero, wholeFrames: Array([[UInt8]](repeating: bytes, count: 20).joined()))
    }

    final class Heard: Sendable {
        let events = Mutex<[String]>([])
        let words = Mutex<ReelError?>(nil)
        let asked = Atomic<Int>(0)
        func report(_ event: SourceEvent) {
            events.withLock {
                switch event {
                case .silent(let error): $0.append("silent: \(error.message)")
                case .resumed: $0.append("resumed")
                default: $0.append("\(event)")
                }
            }
        }
        func explain() -> ReelError? {
            asked.add(1, ordering: .relaxed)
            return words.withLock { $0 }
        }
        var all: [String] { events.withLock { $0 } }
    }

    /// Delivers `count` buffers (sound or digital silence), each followed by what the watch's
    /// lookup of the mixer says: as sound comes in real time, slower than a lookup.
    static func deliver(_ watch: ApplicationSilenceWatch, _ count: Int, sound: Bool) {
        for _ in 0..<count {
            watch.delivered(buffer(sound))
            watch.settle()
        }
    }

    /// Said after a second of digital silence, once; ended by the first sound, after which what
    /// the routing said is said again; nothing more after that, silence or not.
    @Test func saidAfterASecondAndEndedByTheFirstSound() {
        let heard = Heard()
        heard.words.withLock { $0 = ReelError(.sourceUnavailable, "muted") }
        let others = Silences()
        let watch = ApplicationSilenceWatch(rate: 1000, others: others, report: heard.report, explain: heard.explain)
        Self.deliver(watch, 99, sound: false)
        #expect(heard.all.isEmpty)
        Self.deliver(watch, 1, sound: false)
        #expect(heard.all == ["silent: muted"])
        Self.deliver(watch, 300, sound: false)
        #expect(heard.all == ["silent: muted"])
        others.add(ReelError(.sourceUnavailable, "no application 'B' has played"))
        Self.deliver(watch, 1, sound: true)
        #expect(heard.all == ["silent: muted", "resumed", "silent: no application 'B' has played"])
        Self.deliver(watch, 300, sound: false)
        watch.finish()
        #expect(heard.all.count == 3, "\(heard.all)")
    }

    /// Sound before the second is up: nothing said, ever (a silence after sound is the
    /// application's, as a microphone's is).
    @Test func silenceThenSoundWithinTheSecondIsNothing() {
        let heard = Heard()
        heard.words.withLock { $0 = ReelError(.sourceUnavailable, "muted") }
        let watch = ApplicationSilenceWatch(rate: 1000, others: Silences(), report: heard.report, explain: heard.explain)
        Self.deliver(watch, 60, sound: false)
        Self.deliver(watch, 1, sound: true)
        Self.deliver(watch, 300, sound: false)
        watch.finish()
        #expect(heard.all.isEmpty)
        #expect(heard.asked.load(ordering: .relaxed) == 0)
    }

    /// No chosen application plays (nothing to say): asked again after each further second,
    /// and said once one plays muted. An application that starts playing counts the second
    /// again (``ApplicationSilenceWatch/restart()``).
    @Test func withNothingToSayItLooksAgainEachSecond() {
        let heard = Heard()
        let watch = ApplicationSilenceWatch(rate: 1000, others: Silences(), report: heard.report, explain: heard.explain)
        Self.deliver(watch, 250, sound: false)
        #expect(heard.asked.load(ordering: .relaxed) == 2)
        #expect(heard.all.isEmpty)
        heard.words.withLock { $0 = ReelError(.sourceUnavailable, "muted") }
        watch.restart()
        Self.deliver(watch, 99, sound: false)
        #expect(heard.all.isEmpty)
        Self.deliver(watch, 1, sound: false)
        #expect(heard.all == ["silent: muted"])
        // A restart ends nothing by itself, but what ended the silence (an application that
        // started playing) is followed by it again a second later.
        watch.restart()
        Self.deliver(watch, 100, sound: false)
        #expect(heard.all == ["silent: muted", "silent: muted"])
    }

    /// A recording shorter than the second: said at the end when there is something to say.
    @Test func aShortSilenceIsSaidAtTheEnd() {
        let heard = Heard()
        let watch = ApplicationSilenceWatch(rate: 1000, others: Silences(), report: heard.report, explain: heard.explain)
        Self.deliver(watch, 30, sound: false)
        watch.finish()
        #expect(heard.all.isEmpty)
        heard.words.withLock { $0 = ReelError(.sourceUnavailable, "muted") }
        let again = ApplicationSilenceWatch(rate: 1000, others: Silences(), report: heard.report, explain: heard.explain)
        Self.deliver(again, 30, sound: false)
        again.finish()
        #expect(heard.all == ["silent: muted"])
    }
}
