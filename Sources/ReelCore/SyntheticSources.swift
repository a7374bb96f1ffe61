import Foundation
import Synchronization

/// The synthetic test camera: the ``TestPattern`` at any size and rate, paced on the session
/// clock, with the frame number burned in and a flash at each beep of the shared schedule.
public final class TestPatternSource: CameraSource {
    public let name: String
    public var kind: SampleKind { .video }
    /// The frame size.
    public let size: PixelSize
    /// The frame rate.
    public let frameRate: FrameRate
    /// When the pattern flashes.
    public let beeps: BeepSchedule
    /// A solid colour under the counter strip instead of moving bars, if set.
    public let background: YUVColor?
    public let zoom = ZoomControl()
    private let thread = CaptureThread<FramePool>(threadName: "reel.testpattern")
    /// The clock the running thread sleeps on: woken at the stop.
    private let clock = Mutex<(any MediaClock)?>(nil)

    /// Creates a test camera of `size` at `frameRate`; with a `background`, the picture is
    /// that solid colour under the counter strip.
    public init(size: PixelSize = PixelSize(width: 1280, height: 720), frameRate: FrameRate = FrameRate(30),
                beeps: BeepSchedule = BeepSchedule(), background: YUVColor? = nil, name: String? = nil) {
        self.size = size
        self.frameRate = frameRate
        self.beeps = beeps
        self.background = background
        self.name = name ?? "test pattern \(size)@\(frameRate)"
    }

    public func prepare() throws -> SourceFormat {
        guard size.width >= 16, size.height >= 16, size.width % 2 == 0, size.height % 2 == 0 else {
            throw ReelError(.invalidConfiguration, "test pattern size \(size) is not usable",
                            hint: "use even sizes of at least 16x16")
        }
        return .video(size: size, pixelFormat: .yuv420p, frameRate: frameRate)
    }

    public func start(_ context: SourceContext) throws {
        _ = try prepare()
        clock.withLock { $0 = context.clock }
        let rate = frameRate, beeps = self.beeps, background = self.background, size = self.size
        try thread.start(sourceName: name, open: { _ in FramePool(format: .yuv420p, size: size, capacity: 8) }) { pool, thread in
            // The first frame is the first slot at or after the moment we start.
            var index = rate.frameIndex(at: context.startTime(), rounding: .up)
            while !thread.isStopRequested {
                let pts = rate.time(ofFrame: index)
                context.clock.sleep(until: context.origin + pts)
                if thread.isStopRequested { break }
                let frame = context.clock.isRealTime
                    ? pool.makeFrame(presentationTime: pts, sequenceNumber: index)
                    : pool.makeFrameWaiting(presentationTime: pts, sequenceNumber: index)
                // The pool's frames are yuv420p, which the pattern always draws.
                if let frame, (try? TestPattern.draw(index: index, flash: beeps.isBeeping(at: pts), background: background, into: frame)) != nil {
                    context.deliver(.video(frame))
                } else {
                    context.report(.droppedFrames(1, reason: .encoderBehind))
                }
                index += 1
                // Under a real clock, skip slots that have already passed rather than bursting.
                if context.clock.isRealTime {
                    let now = rate.frameIndex(at: context.timelineNow())
                    if now > index { context.report(.droppedFrames(Int(now - index), reason: .captureLate)); index = now }
                }
            }
        }
    }

    public func stop() {
        let clock = self.clock.withLock { $0 }
        thread.stop(interrupt: { clock?.wakeSleepers() })
    }
}

/// The synthetic tone: a quiet 440 Hz sine with a loud 1 kHz beep at each time of a
/// ``BeepSchedule``, delivered in 10 ms buffers paced on the session clock.
public final class ToneSource: CaptureSource {
    public let name: String
    public let kind: SampleKind
    /// The format of the delivered audio.
    public let format: AudioFormat
    /// The frequency of the background tone.
    public let toneFrequency: Double
    /// The frequency of the beeps.
    public let beepFrequency: Double
    /// When the tone beeps.
    public let beeps: BeepSchedule
    private let thread = CaptureThread<Void>(threadName: "reel.tone")
    /// The clock the running thread sleeps on: woken at the stop.
    private let clock = Mutex<(any MediaClock)?>(nil)

    /// Creates a tone source; each argument is the property of the same name.
    public init(format: AudioFormat = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2),
                toneFrequency: Double = 440, beepFrequency: Double = 1000, beeps: BeepSchedule = BeepSchedule(),
                kind: SampleKind = .audio) {
        self.format = format
        self.toneFrequency = toneFrequency
        self.beepFrequency = beepFrequency
        self.beeps = beeps
        self.kind = kind
        self.name = "tone \(Int(toneFrequency)) Hz"
    }

    public func prepare() throws -> SourceFormat { .audio(format) }

    /// The value of the signal at sample `n` (mono, -1...1).
    public func value(atSample n: Int64) -> Float {
        let rate = Double(format.sampleRate)
        let t = Double(n) / rate
        var v = 0.1 * sin(2 * Double.pi * toneFrequency * t)
        if beeps.isBeeping(at: MediaTime(value: n, timescale: Int32(format.sampleRate))) {
            v += 0.7 * sin(2 * Double.pi * beepFrequency * t)
        }
        return Float(v)
    }

    public func start(_ context: SourceContext) throws {
        let format = self.format
        clock.withLock { $0 = context.clock }
        let chunk = format.sampleRate / 100
        try thread.start(sourceName: name, open: { _ in }) { [self] _, thread in
            let rate = Int32(format.sampleRate)
            // Align the first buffer to a chunk boundary at or after now.
            let startTicks = context.startTime().convertedValue(to: rate, rounding: .up)
            var sampleIndex = (startTicks + Int64(chunk) - 1) / Int64(chunk) * Int64(chunk)
            var bytes = [UInt8](repeating: 0, count: chunk * format.bytesPerFrame)
            while !thread.isStopRequested {
                let pts = MediaTime(value: sampleIndex, timescale: rate)
                // A buffer is captured once its last sample has happened.
                context.clock.sleep(until: context.origin + pts + format.duration(ofFrames: chunk))
                if thread.isStopRequested { break }
                bytes.withUnsafeMutableBytes { raw in
                    for i in 0..<chunk {
                        let v = value(atSample: sampleIndex + Int64(i))
                        for c in 0..<format.channels {
                            let offset = (i * format.channels + c) * format.sampleFormat.bytesPerSample
                            switch format.sampleFormat {
                            case .f32: raw.storeBytes(of: v, toByteOffset: offset, as: Float.self)
                            case .s16: raw.storeBytes(of: Int16(max(-32767, min(32767, v * 32767))), toByteOffset: offset, as: Int16.self)
                            }
                        }
                    }
                }
                context.deliver(.audio(AudioBuffer(format: format, presentationTime: pts, wholeFrames: bytes)))
                sampleIndex += Int64(chunk)
            }
        }
    }

    public func stop() {
        let clock = self.clock.withLock { $0 }
        thread.stop(interrupt: { clock?.wakeSleepers() })
    }
}
