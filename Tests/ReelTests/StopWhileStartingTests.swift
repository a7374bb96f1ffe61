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
}
