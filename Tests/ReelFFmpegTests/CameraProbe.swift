import Foundation
import ReelCore
import ReelSystem
import ReelTestSupport
import Synchronization

/// Runs a camera source outside a session and keeps what it delivered: for each frame its
/// times, sequence number, size, the mean colour of its middle and the test-pattern counter
/// (frames themselves are let go at once, so the camera's pool never runs dry); and every event.
final class CameraProbe: Sendable {
    struct Seen: Sendable {
        var presentationTime: MediaTime
        var captureTime: MediaTime?
        var sequenceNumber: Int64
        var size: PixelSize
        var color: (y: Double, cb: Double, cr: Double)
        var counter: Int64?
    }

    struct Event: Sendable {
        var event: SourceEvent
        /// When it came, on the host clock.
        var time: MediaTime
        var frameCount: Int
    }

    let clock: any MediaClock
    let origin: MediaTime
    private let frames = Mutex<[Seen]>([])
    private let events = Mutex<[Event]>([])

    init(clock: any MediaClock = HostClock()) {
        self.clock = clock
        origin = clock.now()
    }

    var context: SourceContext {
        SourceContext(id: SourceID(0), clock: clock, origin: origin, deliver: { [self] sample in
            guard case .video(let frame) = sample else { return }
            let seen = Self.look(at: frame)
            frames.withLock { $0.append(seen) }
        }, report: { [self] event in
            let count = frames.withLock { $0.count }
            events.withLock { $0.append(Event(event: event, time: HostClock().now(), frameCount: count)) }
        })
    }

    var seen: [Seen] { frames.withLock { $0 } }
    var frameCount: Int { frames.withLock { $0.count } }
    var reported: [Event] { events.withLock { $0 } }

    var interruptions: [ReelError] {
        reported.compactMap { if case .interrupted(let e) = $0.event { return e } else { return nil } }
    }
    var resumptions: Int { reported.filter { if case .resumed = $0.event { return true } else { return false } }.count }
    var losses: [ReelError] { reported.compactMap { if case .lost(let e) = $0.event { return e } else { return nil } } }
    var hasEnded: Bool { reported.contains { if case .ended = $0.event { return true } else { return false } } }

    /// Waits (real time) until `condition` holds or `seconds` pass; returns whether it held.
    @discardableResult
    func wait(upTo seconds: Double, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    private static func look(at frame: VideoFrame) -> Seen {
        let w = frame.width, h = frame.height
        func mean(_ plane: Int, _ pw: Int, _ ph: Int) -> Double {
            frame.withUnsafePlane(plane) { bytes, stride in
                var sum = 0, n = 0
                for row in (ph * 2 / 5)..<(ph * 4 / 5) {
                    for col in (pw / 4)..<(pw * 3 / 4) { sum += Int(bytes[row * stride + col]); n += 1 }
                }
                return n > 0 ? Double(sum) / Double(n) : 0
            }
        }
        let counter = frame.withUnsafePlane(0) { bytes, stride in
            TestPattern.readCounter(luma: UnsafeRawBufferPointer(bytes), width: w, height: h, stride: stride)
        }
        return Seen(presentationTime: frame.presentationTime, captureTime: frame.captureTime,
                    sequenceNumber: frame.sequenceNumber, size: frame.size,
                    color: (mean(0, w, h), mean(1, w / 2, h / 2), mean(2, w / 2, h / 2)), counter: counter)
    }
}

extension CameraProbe.Seen {
    /// Whether the frame's middle has `expected`'s colour, within `tolerance` per channel.
    func matches(_ expected: YUVColor, tolerance: Double = 14) -> Bool {
        abs(color.y - Double(expected.y)) <= tolerance && abs(color.cb - Double(expected.cb)) <= tolerance
            && abs(color.cr - Double(expected.cr)) <= tolerance
    }
}

/// Runs `body` on a thread and waits up to `seconds` for it: a hang fails the test instead of
/// stalling the suite. Returns the body's result and the seconds it took, or `nil` on a hang.
func bounded<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () -> T) -> (T, Double)? {
    let result = Mutex<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    let start = Date()
    Thread {
        let value = body()
        result.withLock { $0 = value }
        done.signal()
    }.start()
    guard done.wait(timeout: .now() + seconds) == .success else { return nil }
    return (result.withLock { $0! }, Date().timeIntervalSince(start))
}
