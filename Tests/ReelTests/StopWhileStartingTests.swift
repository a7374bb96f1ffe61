import Foundation
import Synchronization
import Testing
import Reel

/// `stop()` called while `start()` is still opening the sources (Ctrl-C while a slow network
/// camera connects) stops the session: nothing is left running once both have returned.
@Suite struct StopWhileStartingTests {
    /// A source whose `prepare()` blocks until the test lets it go, the way a network camera
    /// blocks while it connects; it notes whether it runs.
    final class SlowSource: CaptureSource, @unchecked Sendable {
        let name = "slow camera"
        let kind = SampleKind.video
        private let lock = NSCondition()
        private var preparing = false
        private var released = false
        private var running = false
        private var everStarted = false

        func prepare() throws -> SourceFormat {
            lock.lock(); defer { lock.unlock() }
            preparing = true
            lock.broadcast()
            while !released { lock.wait() }
            return .video(size: PixelSize(width: 160, height: 120), pixelFormat: .yuv420p, frameRate: FrameRate(30))
        }

        func start(_ context: SourceContext) throws {
            lock.lock(); defer { lock.unlock() }
            running = true
            everStarted = true
        }

        func stop() {
            lock.lock(); defer { lock.unlock() }
            running = false
        }

        /// Waits until `prepare()` has been entered.
        func waitUntilPreparing() {
            lock.lock(); defer { lock.unlock() }
            while !preparing { lock.wait() }
        }

        /// Lets `prepare()` return.
        func release() {
            lock.lock(); defer { lock.unlock() }
            released = true
            lock.broadcast()
        }

        var isRunning: Bool { lock.lock(); defer { lock.unlock() }; return running }
    }

    /// An output that notes whether it was prepared and finished.
    final class NoteOutput: CaptureOutput, @unchecked Sendable {
        private let notes = Mutex((prepared: 0, finished: 0))
        func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {
            notes.withLock { $0.prepared += 1 }
        }
        func consume(_ sample: SourcedSample) {}
        func sourceEvent(_ event: SourceEvent, from source: SourceID) {}
        func finish() async { notes.withLock { $0.finished += 1 } }
        func sessionWillStop() {}
        /// Prepared outputs that were not finished.
        var unfinished: Int { notes.withLock { $0.prepared - $0.finished } }
    }

    @Test func stopDuringStartLeavesNothingRunning() async throws {
        let session = CaptureSession(clock: ManualClock())
        let slow = SlowSource()
        let output = NoteOutput()
        try session.addInput(slow)
        try session.addOutput(output)
        let starting = Task { try await session.start() }
        // Off the cooperative pool: the start's prepare runs on a thread of its own.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread { slow.waitUntilPreparing(); done.resume() }.start()
        }
        let stopping = Task { await session.stop() }
        // The stop has been asked for before the source finishes connecting; give it its turn
        // (its effect is checked below whichever way the two interleave).
        while session.lifecycle == .starting { await Task.yield() }
        slow.release()
        try await starting.value
        await stopping.value
        #expect(!slow.isRunning, "the source that was starting is stopped")
        #expect(!session.isRunning)
        #expect(output.unfinished == 0, "every prepared output is finished")
        #expect(session.canAddInput(SlowSource()), "the session is stopped, so it can be configured again")
    }

    /// An output whose `finish()` waits until the test lets it go, the way a recorder
    /// finalising its file takes a while.
    final class SlowFinishOutput: CaptureOutput, @unchecked Sendable {
        private let state = Mutex<(gate: CheckedContinuation<Void, Never>?, entered: Bool, finished: Bool)>((nil, false, false))
        func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {}
        func consume(_ sample: SourcedSample) {}
        func sourceEvent(_ event: SourceEvent, from source: SourceID) {}
        func sessionWillStop() {}
        func finish() async {
            await withCheckedContinuation { gate in state.withLock { $0.gate = gate; $0.entered = true } }
            state.withLock { $0.finished = true }
        }
        var isFinishing: Bool { state.withLock { $0.entered } }
        var hasFinished: Bool { state.withLock { $0.finished } }
        func release() { state.withLock { $0.gate?.resume(); $0.gate = nil } }
    }

    /// A second `stop()` while the first is finishing the outputs returns only once they have
    /// finished: `reel record` stopped by a signal and by the end of its recording at once
    /// exited while the frame log was still being finished, leaving it half written.
    @Test func aSecondStopWaitsForTheFirstToFinish() async throws {
        let session = CaptureSession(clock: ManualClock())
        let output = SlowFinishOutput()
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        try session.addOutput(output)
        try await session.start()
        let first = Task { await session.stop() }
        while !output.isFinishing { await Task.yield() }
        let secondReturned = Mutex(false)
        let second = Task { () -> Bool in
            await session.stop()
            secondReturned.withLock { $0 = true }
            return output.hasFinished
        }
        for _ in 0..<200 { await Task.yield() }
        #expect(!secondReturned.withLock { $0 }, "the second stop returned while the outputs were finishing")
        output.release()
        await first.value
        #expect(await second.value, "the second stop returned before the outputs had finished")
    }
}
