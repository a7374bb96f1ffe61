import Foundation
import ReelCore

/// A ``PulseAudioServer`` that answers from a script, for testing what ``PulseAudioSource``
/// does with the answers — presentation times, drift, a server that goes away and comes back —
/// without a server and faster than real time.
///
/// Each connection attempt takes the next ``Answer``: a refusal, or a stream that plays its
/// ``Step``s. A step moves the session's ``ManualClock`` on by its `after` before it happens, so
/// the source reads the clock as a real one would read it when the data arrived; a wait for data
/// ends with nothing after the time the source asked to wait at most, as a real one does. Each frame's
/// samples all hold the frame's number counted over the whole script (as `Float`, exact to 2²⁴),
/// so a test can tell exactly which frames were delivered. Once the script has played out,
/// ``waitUntilPlayedOut()`` returns and the connection is left idle.
package final class ScriptedPulseAudioServer: PulseAudioServer, @unchecked Sendable {
    /// One thing that happens on a scripted stream.
    package enum Step: Sendable {
        /// `frames` frames arrive, `after` the previous step; the newest of them was captured
        /// `latency` before they arrived.
        case data(frames: Int, after: MediaTime, latency: MediaTime = .zero)
        /// The server goes away, `after` the previous step.
        case serverGone(after: MediaTime)
        /// The reader does not read for `duration` (its process was stopped, the system too
        /// busy): the clock moves on within one wait for data, however short that wait was.
        case readerStalls(for: MediaTime)
        /// `frames` frames are lost before they are read, `after` the previous step, for
        /// `kind` (a graph cycle the capture missed, or sound its buffer could not hold): the
        /// recording delivers silence for them and says so (``PulseAudioRecording/takeLosses()``),
        /// as PipeWire's capture of Reel's sink does.
        case lost(frames: Int, after: MediaTime, kind: RecordedLoss.Kind = .missedCycles)
    }

    /// What a connection attempt meets.
    package enum Answer: Sendable {
        /// The server is not running.
        case refused
        /// The device is not there.
        case noDevice
        /// A stream opens and plays the steps.
        case stream([Step])
        /// The attempt waits until it is cancelled (a server that never answers).
        case hangs
    }

    private let condition = NSCondition()
    private let clock: ManualClock
    // Guarded by `condition`.
    private var answers: [Answer]
    private var nextFrame: Int64 = 0
    private var open = 0
    private var attempts = 0
    private var playedOut = false
    private var waitingAttempts = 0

    /// A server whose connection attempts meet `answers` in turn (and refusals after them);
    /// its steps move `clock`.
    package init(clock: ManualClock, answers: [Answer]) {
        self.clock = clock
        self.answers = answers
    }

    /// How many record streams are open now.
    package var openRecordings: Int { locked { open } }

    /// How many times a connection was attempted (``checkDevice(_:)`` included).
    package var connectionAttempts: Int { locked { attempts } }

    /// Waits until every answer has been used and the last stream has played its steps.
    package func waitUntilPlayedOut() {
        condition.lock()
        while !playedOut { condition.wait() }
        condition.unlock()
    }

    /// Waits until a connection attempt hangs (an ``Answer/hangs``).
    package func waitUntilAttemptHangs() {
        condition.lock()
        while waitingAttempts == 0 { condition.wait() }
        condition.unlock()
    }

    /// Checks the device as the next ``Answer`` says, without using it up.
    package func checkDevice(_ request: PulseRecordRequest) throws(ReelError) {
        // Checking does not use up an answer: it looks at the next one.
        let answer: Answer? = locked {
            attempts += 1
            return answers.first
        }
        switch answer {
        case .refused?, nil: throw Self.refusal
        case .noDevice?: throw ReelError(.sourceUnavailable, request.missingDevice)
        case .stream?, .hangs?: return
        }
    }

    /// Opens what the next ``Answer`` says: a scripted stream, or a refusal.
    package func openRecording(_ request: PulseRecordRequest,
                               isCancelled: @escaping () -> Bool) throws(ReelError) -> any PulseAudioRecording {
        let answer: Answer? = locked {
            attempts += 1
            if answers.isEmpty {
                playedOut = true
                condition.broadcast()
                return nil
            }
            return answers.removeFirst()
        }
        switch answer {
        case .refused?, nil:
            throw Self.refusal
        case .noDevice?:
            throw ReelError(.sourceUnavailable, request.missingDevice)
        case .hangs?:
            locked { waitingAttempts += 1; condition.broadcast() }
            while !isCancelled() { usleep(1_000) }
            locked { waitingAttempts -= 1 }
            throw ReelError(.notRunning, "connecting was cancelled")
        case .stream(let steps)?:
            locked { open += 1 }
            let monitor = request.device.map { $0.hasSuffix(".monitor") || $0 == "@DEFAULT_MONITOR@" } ?? false
            return Recording(server: self, steps: steps, format: request.format, isMonitor: monitor)
        }
    }

    private static let refusal = ReelError(.sourceUnavailable, "PulseAudio is not running (connection refused)")

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock(); defer { condition.unlock() }
        return try body()
    }

    /// The next frame numbers for `count` frames.
    fileprivate func takeFrames(_ count: Int) -> Int64 {
        locked {
            defer { nextFrame += Int64(count) }
            return nextFrame
        }
    }

    fileprivate func advance(by delta: MediaTime) { clock.advance(by: delta) }

    fileprivate func streamEnded() {
        locked {
            if answers.isEmpty { playedOut = true }
            condition.broadcast()
        }
    }

    fileprivate func closed() { locked { open -= 1 } }

    /// One scripted record stream.
    private final class Recording: PulseAudioRecording {
        private let server: ScriptedPulseAudioServer
        private var steps: ArraySlice<Step>
        private let format: AudioFormat
        private var arrived: [UInt8] = []
        private(set) var latency: MediaTime = .zero
        private var gone = false
        private var reportedEnd = false
        /// Frames delivered or lost since the stream opened, and the losses not yet taken.
        private var count: Int64 = 0
        private var losses: [RecordedLoss] = []

        /// A device named as a monitor is one.
        let isMonitor: Bool

        init(server: ScriptedPulseAudioServer, steps: [Step], format: AudioFormat, isMonitor: Bool) {
            self.isMonitor = isMonitor
            self.server = server
            self.steps = steps[...]
            self.format = format
        }

        deinit { server.closed() }

        func pump(timeoutMicroseconds: Int32) throws(ReelError) {
            if gone { throw Self.lost }
            guard let step = steps.popFirst() else {
                if !reportedEnd { reportedEnd = true; server.streamEnded() }
                usleep(1_000)
                return
            }
            switch step {
            case .data(let frames, let after, let latency):
                let timeout = MediaTime(value: Int64(timeoutMicroseconds), timescale: 1_000_000)
                if after > timeout {
                    // Nothing arrives within the wait: the reader asks again.
                    server.advance(by: timeout)
                    steps.insert(.data(frames: frames, after: after - timeout, latency: latency), at: steps.startIndex)
                    return
                }
                server.advance(by: after)
                self.latency = latency
                let first = server.takeFrames(frames)
                for frame in first..<(first + Int64(frames)) {
                    for _ in 0..<format.channels { append(Float(frame)) }
                }
                count += Int64(frames)
            case .lost(let frames, let after, let kind):
                server.advance(by: after)
                _ = server.takeFrames(frames)
                for _ in 0..<(frames * format.channels) { append(0) }
                losses.append(RecordedLoss(start: count, frames: Int64(frames), kind: kind))
                count += Int64(frames)
            case .readerStalls(let duration):
                server.advance(by: duration)
            case .serverGone(let after):
                let timeout = MediaTime(value: Int64(timeoutMicroseconds), timescale: 1_000_000)
                if after > timeout {
                    server.advance(by: timeout)
                    steps.insert(.serverGone(after: after - timeout), at: steps.startIndex)
                    return
                }
                server.advance(by: after)
                gone = true
                throw Self.lost
            }
        }

        private func append(_ value: Float) {
            switch format.sampleFormat {
            case .f32: withUnsafeBytes(of: value.bitPattern.littleEndian) { arrived.append(contentsOf: $0) }
            case .s16: withUnsafeBytes(of: Int16(truncatingIfNeeded: Int(value)).littleEndian) { arrived.append(contentsOf: $0) }
            }
        }

        func takeLosses() -> [RecordedLoss] {
            defer { losses = [] }
            return losses
        }

        func read(appendingTo buffer: inout [UInt8]) throws(ReelError) -> Int {
            let count = arrived.count
            buffer.append(contentsOf: arrived)
            arrived.removeAll(keepingCapacity: true)
            return count
        }

        private static let lost = ReelError(.sourceUnavailable, "the connection to PulseAudio was lost (Connection terminated)",
                                            hint: "the audio server stopped or restarted")
    }
}
