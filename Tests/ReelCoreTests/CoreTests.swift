import Foundation
import Testing
import ReelCore
import ReelSystem

@Suite struct MediaTimeTests {
    @Test func arithmeticAcrossTimescales() {
        let a = MediaTime(value: 1, timescale: 30)
        let b = MediaTime(value: 1600, timescale: 48_000)
        #expect(a == b)
        #expect(a + b == MediaTime(value: 2, timescale: 30))
        #expect(MediaTime(value: 3, timescale: 2) - MediaTime(value: 1, timescale: 2) == MediaTime(value: 1, timescale: 1))
        #expect(MediaTime(nanoseconds: 1_500_000_000).seconds == 1.5)
        #expect(MediaTime(value: 1, timescale: 3).convertedValue(to: 1000, rounding: .down) == 333)
        #expect(MediaTime(value: 1, timescale: 3).convertedValue(to: 1000, rounding: .up) == 334)
        #expect(MediaTime(value: -1, timescale: 3).convertedValue(to: 1000, rounding: .down) == -334)
        // Nanosecond clocks a year in do not overflow.
        let year = MediaTime(nanoseconds: 365 * 24 * 3600 * 1_000_000_000)
        #expect(year.convertedValue(to: 48_000) == 365 * 24 * 3600 * 48_000)
    }

    @Test func frameGrid() {
        let rate = FrameRate(30)
        #expect(rate.time(ofFrame: 45) == MediaTime(value: 3, timescale: 2))
        #expect(rate.frameIndex(at: MediaTime(seconds: 1.0)) == 30)
        #expect(rate.frameIndex(at: MediaTime(seconds: 1.01), rounding: .up) == 31)
        #expect(rate.frameIndex(at: MediaTime(seconds: 1.01), rounding: .nearest) == 30)
        let ntsc = FrameRate(30000, per: 1001)
        #expect(ntsc.frameIndex(at: ntsc.time(ofFrame: 1234)) == 1234)
    }

    @Test func geometryParsing() {
        #expect(PixelRect(geometry: "1280x720+10+20") == PixelRect(x: 10, y: 20, width: 1280, height: 720))
        #expect(PixelRect(geometry: "640x480") == PixelRect(x: 0, y: 0, width: 640, height: 480))
        #expect(PixelRect(geometry: "640x480+10") == nil)
        #expect(PixelRect(geometry: "axb+1+2") == nil)
        #expect(PixelSize(parsing: "0x10") == nil)
    }
}

@Suite struct ClockTests {
    @Test func virtualClockJumpsToDeadlines() {
        let clock = ManualClock()
        clock.sleep(until: MediaTime(seconds: 10))
        #expect(clock.now() == MediaTime(seconds: 10))
        clock.sleep(until: MediaTime(seconds: 5))
        #expect(clock.now() == MediaTime(seconds: 10), "never goes back")
    }

    @Test func steppedClockWakesSleepersWhenAdvanced() {
        let clock = ManualClock(mode: .stepped)
        let woke = NSCondition()
        nonisolated(unsafe) var done = false
        Thread {
            clock.sleep(until: MediaTime(seconds: 1))
            woke.lock(); done = true; woke.signal(); woke.unlock()
        }.start()
        clock.advance(by: MediaTime(seconds: 0.5))
        woke.lock(); _ = woke.wait(until: Date(timeIntervalSinceNow: 0.1)); let early = done; woke.unlock()
        #expect(!early)
        clock.advance(by: MediaTime(seconds: 0.5))
        woke.lock(); while !done { woke.wait() }; woke.unlock()
        #expect(done)
    }

    @Test func hostClockIsMonotonic() {
        let clock = HostClock()
        let a = clock.now()
        clock.sleep(until: a + MediaTime(seconds: 0.01))
        #expect(clock.now() - a >= MediaTime(seconds: 0.01))
    }
}

@Suite struct FramesAndQueues {
    @Test func poolReusesMemoryAndIsBounded() {
        let pool = FramePool(format: .yuv420p, size: PixelSize(width: 64, height: 48), capacity: 2)
        var a = pool.makeFrame()
        let b = pool.makeFrame()
        #expect(a != nil && b != nil)
        #expect(pool.makeFrame() == nil, "capacity reached: the caller drops and counts")
        a = nil
        #expect(pool.framesInUse == 1)
        #expect(pool.makeFrame() != nil, "released memory comes back")
        _ = b
    }

    @Test func framePlanesAndStrides() {
        let pool = FramePool(format: .nv12, size: PixelSize(width: 50, height: 30), capacity: 1)
        let frame = pool.makeFrame()!
        #expect(frame.strides.count == 2)
        #expect(frame.strides.allSatisfy { $0 % 32 == 0 && $0 >= 50 })
        frame.withUnsafePlane(1) { bytes, stride in #expect(bytes.count == stride * 15) }
    }

    @Test func boundedChannelDropsOrBlocks() {
        let dropping = Channel<Int>(capacity: 2, policy: .dropNewest)
        #expect(dropping.send(1) == .queued && dropping.send(2) == .queued)
        #expect(dropping.send(3) == .dropped)
        #expect(dropping.receive() == 1)
        dropping.close()
        #expect(dropping.receive() == 2)
        #expect(dropping.receive() == nil)

        let blocking = Channel<Int>(capacity: 1, policy: .block)
        blocking.send(1)
        Thread { Thread.sleep(forTimeInterval: 0.05); _ = blocking.receive() }.start()
        #expect(blocking.send(2) == .queued, "waits for room instead of dropping")
        #expect(blocking.receive() == 2)
    }
}

@Suite struct TestPatternTests {
    @Test(arguments: [0, 1, 29, 12345, (1 << 24) - 1] as [Int64])
    func counterRoundTrips(_ index: Int64) throws {
        let pool = FramePool(format: .yuv420p, size: PixelSize(width: 320, height: 240), capacity: 1)
        let frame = pool.makeFrame()!
        try TestPattern.draw(index: index, flash: false, into: frame)
        frame.withUnsafePlane(0) { y, stride in
            #expect(TestPattern.readCounter(luma: UnsafeRawBufferPointer(y), width: 320, height: 240, stride: stride) == index)
            #expect(!TestPattern.isFlash(luma: UnsafeRawBufferPointer(y), width: 320, height: 240, stride: stride))
        }
        try TestPattern.draw(index: index, flash: true, into: frame)
        frame.withUnsafePlane(0) { y, stride in
            #expect(TestPattern.isFlash(luma: UnsafeRawBufferPointer(y), width: 320, height: 240, stride: stride))
        }
    }

    @Test func beepScheduleAndToneAgree() {
        let tone = ToneSource()
        let beeps = BeepSchedule()
        #expect(!beeps.isBeeping(at: MediaTime(seconds: 0.49)))
        #expect(beeps.isBeeping(at: MediaTime(seconds: 0.5)))
        #expect(beeps.isBeeping(at: MediaTime(seconds: 1.55)))
        #expect(!beeps.isBeeping(at: MediaTime(seconds: 1.65)))
        let loud = (24_000..<24_100).map { abs(tone.value(atSample: Int64($0))) }.max()!
        let quiet = (0..<100).map { abs(tone.value(atSample: Int64($0))) }.max()!
        #expect(loud > 0.5 && quiet < 0.15)
    }
}

@Suite struct AudioAlignmentTests {
    let format = AudioFormat(sampleFormat: .s16, sampleRate: 48_000, channels: 1)

    func buffer(at sample: Int64, frames: Int) -> AudioBuffer {
        AudioBuffer(format: format, presentationTime: MediaTime(value: sample, timescale: 48_000),
                    wholeFrames: [UInt8](repeating: 1, count: frames * 2))
    }

    @Test func gapsBecomeSilenceAndOverlapsAreCut() throws {
        var aligner = AudioTrackAligner(format: format)
        #expect(try aligner.place(buffer(at: 0, frames: 480)).map(\.frameCount) == [480])
        // 5 ms of jitter is ignored: the run stays contiguous.
        let jitter = try aligner.place(buffer(at: 720, frames: 480))
        #expect(jitter.map(\.frameCount) == [480])
        #expect(jitter[0].presentationTime == MediaTime(value: 480, timescale: 48_000))
        // A 100 ms gap is filled with silence.
        let gap = try aligner.place(buffer(at: 960 + 4800, frames: 480))
        #expect(gap.map(\.frameCount) == [4800, 480])
        #expect(gap[0].data.allSatisfy { $0 == 0 })
        #expect(aligner.insertedSilence == 4800)
        // A buffer 50 ms early overlaps: its first 2400 samples are dropped.
        let overlap = try aligner.place(buffer(at: 6240 - 2400, frames: 4800))
        #expect(overlap.map(\.frameCount) == [2400])
        #expect(aligner.nextSample == 6240 + 2400)
    }

    @Test func theFirstBufferIsPlacedExactly() throws {
        var aligner = AudioTrackAligner(format: format)
        // Starts 5 ms before zero: the 240 samples before zero are cut, no tolerance.
        #expect(try aligner.place(buffer(at: -240, frames: 480)).map(\.frameCount) == [240])
        var late = AudioTrackAligner(format: format)
        #expect(try late.place(buffer(at: 240, frames: 480)).map(\.frameCount) == [240, 480])
    }

    @Test func limitCutsAtTheExactSample() throws {
        var aligner = AudioTrackAligner(format: format)
        #expect(try aligner.place(buffer(at: 0, frames: 1000), limit: 600).map(\.frameCount) == [600])
        #expect(try aligner.place(buffer(at: 1000, frames: 1000), limit: 600).isEmpty)
    }

    @Test func mixerSumsAndPadsLaggards() throws {
        let f32 = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 1)
        func ones(_ n: Int, _ v: Float) -> AudioBuffer {
            AudioBuffer(format: f32, presentationTime: .zero, wholeFrames: [Float](repeating: v, count: n).withUnsafeBytes { Array($0) })
        }
        var mixer = AudioMixer(inputs: 2, format: f32, maxLag: MediaTime(value: 1000, timescale: 48_000))
        #expect(try mixer.add(ones(500, 0.25), input: 0) == nil, "waits for the other input")
        let mixed = try mixer.add(ones(500, 0.5), input: 1)
        #expect(mixed?.frameCount == 500)
        #expect(mixed?.floatSamples().allSatisfy { abs($0 - 0.75) < 1e-6 } == true)
        // Input 1 stalls: once input 0 is more than maxLag ahead, it is mixed with silence.
        let ahead = try mixer.add(ones(3000, 0.25), input: 0)
        #expect(ahead?.frameCount == 2000)
        // Input 1's late samples for that stretch are dropped, not shifted.
        let late = try mixer.add(ones(2500, 0.5), input: 1)
        #expect(late?.frameCount == 500)
        #expect(late?.floatSamples().allSatisfy { abs($0 - 0.75) < 1e-6 } == true)
    }
}

@Suite struct SessionStateTests {
    @Test func lifecycle() throws {
        var machine = SessionStateMachine()
        #expect(machine.stop() == .none, "stopping what never started is a no-op")
        #expect(try machine.start() == .start)
        #expect(throws: ReelError.self) { try machine.start() }
        #expect(machine.started() == .none)
        #expect(machine.isRunning && !machine.isConfigurable)
        #expect(machine.stop() == .stop)
        #expect(machine.stop() == .waitForStop, "a second stop waits for the first to finish")
        machine.stopped()
        #expect(machine.stop() == .none)
        #expect(machine.isConfigurable)
        #expect(try machine.start() == .start, "a stopped session starts again")
    }

    @Test func aStopWhileStartingIsKeptAndActedOnByTheStart() throws {
        var machine = SessionStateMachine()
        #expect(try machine.start() == .start)
        #expect(machine.stop() == .waitForStart, "the stop waits for the start")
        #expect(machine.isStartCancelled && !machine.isConfigurable)
        #expect(machine.stop() == .waitForStart, "a second stop waits too")
        #expect(throws: ReelError.self) { try machine.start() }
        #expect(machine.started() == .stop, "the start stops what it started")
        #expect(!machine.isRunning)
        machine.stopped()
        #expect(machine.state == .stopped && machine.isConfigurable)
    }

    @Test func aStartThatFailsAfterAStopEndsFailed() throws {
        var machine = SessionStateMachine()
        _ = try machine.start()
        #expect(machine.stop() == .waitForStart)
        machine.fail(ReelError(.sourceUnavailable, "no camera"))
        #expect(machine.isConfigurable && !machine.isStartCancelled)
        #expect(machine.stop() == .none)
    }

    @Test func settingsValidation() {
        #expect(throws: ReelError.self) { try VideoSettings(preset: "warp").validate() }
        #expect(throws: ReelError.self) { try VideoSettings(rateControl: .crf(80)).validate() }
        #expect(throws: ReelError.self) { try AudioSettings(sampleRate: 12345).validate() }
        #expect(throws: ReelError.self) { try AudioSettings(codec: .opus, sampleRate: 44_100).validate() }
        #expect(throws: Never.self) { try VideoSettings().validate() }
    }

    /// The default audio bit rate is one the codec honours for the channels asked for, and
    /// every default setting passes the checks.
    @Test(arguments: [(AudioCodec.aac, 1), (.aac, 2), (.opus, 1), (.opus, 2)])
    func defaultAudioBitRateSuitsTheChannels(_ codec: AudioCodec, _ channels: Int) {
        let settings = AudioSettings(codec: codec, channels: channels)
        #expect(codec.bitRateRange(channels: channels).contains(settings.bitRate), "\(settings.bitRate)")
        #expect(throws: Never.self) { try settings.validate() }
        #expect(AudioSettings(codec: codec, channels: channels, bitRate: 64_000).bitRate == 64_000)
    }
}

/// Where a live frame's picture comes from and what size it is, fitted or filled.
@Suite struct LiveFrameLayoutTests {
    let hd = PixelSize(width: 1280, height: 720)

    @Test func fitKeepsTheWholePictureAndItsAspect() {
        let (crop, size) = LiveFrame.Scaling.fit.layout(source: hd, into: PixelSize(width: 400, height: 400), evenSize: true)
        #expect(crop == PixelRect(x: 0, y: 0, width: 1280, height: 720))
        #expect(size == PixelSize(width: 400, height: 224))
    }

    @Test func fillCutsTheMiddleToTheExactSize() {
        let (crop, size) = LiveFrame.Scaling.fill.layout(source: hd, into: PixelSize(width: 400, height: 400), evenSize: true)
        #expect(size == PixelSize(width: 400, height: 400))
        #expect(crop == PixelRect(x: 280, y: 0, width: 720, height: 720))
    }

    @Test func noSizeKeepsTheSourcesMadeEven() {
        let (crop, size) = LiveFrame.Scaling.fit.layout(source: PixelSize(width: 641, height: 481), into: nil, evenSize: true)
        #expect(size == PixelSize(width: 640, height: 480))
        #expect(crop.size == size)
    }

    /// Without the even rule (RGB and gray live frames, still pictures) an odd picture is taken
    /// whole: it lost its last column and row.
    @Test func withoutTheEvenRuleAnOddSourceIsTakenWhole() {
        let odd = PixelSize(width: 101, height: 51)
        let (crop, size) = LiveFrame.Scaling.fit.layout(source: odd, into: nil, evenSize: false)
        #expect(size == odd)
        #expect(crop == PixelRect(x: 0, y: 0, width: 101, height: 51))
    }
}
