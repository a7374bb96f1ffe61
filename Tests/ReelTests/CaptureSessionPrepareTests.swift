import Foundation
import Dispatch
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// An output's `prepare` blocks (a file made, encoders opened, a server connected): the
/// session runs it on a thread of its own, so that the app's other tasks go on meanwhile.
@Suite struct CaptureSessionPrepareTests {
    /// An output whose preparation waits until a task of the app lets it go (or ten seconds pass).
    final class WaitingOutput: CaptureOutput, @unchecked Sendable {
        let letGo = DispatchSemaphore(value: 0)
        let wasLetGo = Mutex<Bool?>(nil)
        func prepare(sources: [SourceDescriptor], clock: any MediaClock, origin: MediaTime) throws {
            let inTime = letGo.wait(timeout: .now() + 10) == .success
            wasLetGo.withLock { $0 = inTime }
        }
        func consume(_ sample: SourcedSample) {}
        func sourceEvent(_ event: SourceEvent, from source: SourceID) {}
        func finish() async {}
    }

    @Test func outputsPrepareOffTheTasksThreads() async throws {
        // As many sessions starting at once as the cooperative pool has threads: were their
        // outputs prepared on the pool, every thread would wait and the task that lets them go
        // could not run.
        let count = max(2, ProcessInfo.processInfo.activeProcessorCount)
        var sessions: [CaptureSession] = []
        var outputs: [WaitingOutput] = []
        for _ in 0..<count {
            let session = CaptureSession(clock: ManualClock())
            try session.addInput(TestPatternSource(size: PixelSize(width: 64, height: 48), frameRate: FrameRate(30)))
            let output = WaitingOutput()
            try session.addOutput(output)
            sessions.append(session)
            outputs.append(output)
        }
        let waiting = outputs
        try await withThrowingTaskGroup(of: Void.self) { [sessions] group in
            for session in sessions { group.addTask { try await session.start() } }
            group.addTask {
                // Lets each output go once it waits (no sleep on a pool thread: a short wait each time).
                for output in waiting {
                    try await Task.sleep(for: .milliseconds(200))
                    output.letGo.signal()
                }
            }
            try await group.waitForAll()
        }
        for session in sessions { await session.stop() }
        #expect(outputs.map { $0.wasLetGo.withLock { $0 } } == Array(repeating: true, count: count),
                "each output was let go by the app's task, not by its own ten seconds")
    }
}
