import Testing
@testable import ReelCore

/// Values that come from input (a damaged file's time base, a frame rate typed by a user) never
/// stop the process: they become something the settings' validation can refuse with an error.
@Suite struct NoTrapTests {
    @Test func aTimescaleThatIsNotPositiveCountsAsSeconds() {
        #expect(MediaTime(value: 3, timescale: 0) == MediaTime(value: 3, timescale: 1))
        #expect(MediaTime(value: 3, timescale: -5).seconds == 3)
        #expect(MediaTime(value: 1, timescale: 2).converted(to: 0).timescale == 1)
    }

    @Test(arguments: [(0, 1), (30, 0), (-30, 1), (30, -1)] as [(Int32, Int32)])
    func aFrameRateThatIsNotPositiveIsRefusedByValidation(_ frames: Int32, _ per: Int32) {
        let rate = FrameRate(frames, per: per)
        #expect(!rate.isValid)
        #expect(rate.frameDuration == MediaTime(value: 1, timescale: 1))
        #expect(rate.frameIndex(at: MediaTime(value: 5, timescale: 1)) == 5)
        let error = #expect(throws: ReelError.self) { try VideoSettings(frameRate: rate).validate() }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test func audioThatIsNotWholeFramesIsAnError() throws {
        let stereo = AudioFormat(sampleFormat: .s16, sampleRate: 48_000, channels: 2)
        #expect(throws: ReelError.self) { try AudioBuffer(format: stereo, presentationTime: .zero, data: [0, 0, 0]) }
        #expect(throws: ReelError.self) { try AudioBuffer(format: AudioFormat(channels: 0), presentationTime: .zero, data: []) }
        #expect(throws: ReelError.self) { try AudioBuffer(format: AudioFormat(sampleRate: 0), presentationTime: .zero, data: []) }
        let buffer = try AudioBuffer(format: stereo, presentationTime: .zero, data: [UInt8](repeating: 0, count: 40))
        #expect(buffer.frameCount == 10)
        #expect(buffer.slice(frames: 5..<50).frameCount == 5, "a slice past the end is cut to the buffer")
    }

    @Test func applicationsMakeFramesThatAreThenImmutable() throws {
        let frame = try VideoFrame(format: .yuv420p, size: PixelSize(width: 64, height: 48)) { plane, bytes, _ in
            bytes.initializeMemory(as: UInt8.self, repeating: plane == 0 ? 200 : 128)
        }
        frame.withUnsafePlane(0) { bytes, _ in #expect(bytes.allSatisfy { $0 == 200 }) }
        frame.withUnsafePlane(2) { bytes, _ in #expect(!bytes.isEmpty && bytes.allSatisfy { $0 == 128 }) }
        for size in [PixelSize(width: 0, height: 48), PixelSize(width: 63, height: 48), PixelSize(width: 64, height: 100_000)] {
            #expect(throws: ReelError.self) { try VideoFrame(format: .yuv420p, size: size) { _, _, _ in } }
        }
        // The test pattern draws 4:2:0 only, and says so.
        let bgra = try VideoFrame(format: .bgra, size: PixelSize(width: 64, height: 48)) { _, _, _ in }
        #expect(throws: ReelError.self) { try TestPattern.draw(index: 1, flash: false, into: bgra) }
    }

    @Test func audioThatChangesFormatMidTrackIsAnError() throws {
        let mono = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 1)
        var aligner = AudioTrackAligner(format: mono)
        _ = try aligner.place(AudioBuffer(format: mono, presentationTime: .zero, wholeFrames: [UInt8](repeating: 0, count: 400)))
        let stereo = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2)
        #expect(throws: ReelError.self) { try aligner.place(AudioBuffer(format: stereo, presentationTime: .zero, wholeFrames: [UInt8](repeating: 0, count: 800))) }
        var mixer = AudioMixer(inputs: 1, format: mono)
        #expect(throws: ReelError.self) { try mixer.add(AudioBuffer(format: AudioFormat(sampleRate: 44_100, channels: 1), presentationTime: .zero, wholeFrames: []), input: 0) }
        #expect(throws: ReelError.self) { try mixer.add(AudioBuffer(format: mono, presentationTime: .zero, wholeFrames: []), input: 3) }
    }
}
