import Foundation
import ReelCore

/// A running recording of application audio on a PipeWire server: the recording of Reel's own
/// sink (a ``PulseAudioSource`` through ``PipeWireSinkCapture``) and the thread that links the
/// chosen applications into it (``ApplicationAudioLinker``).
///
/// When the daemon goes away (restarted), the recording says so (interrupted) and reconnects
/// every second on its own, making its sink anew; this thread reconnects too and links the
/// chosen applications into the new sink as they and it appear, and the recording resumes.
/// Nothing is left to put back at the end: the sink and the links go with their connections.
final class LinkedApplicationAudio: @unchecked Sendable {
    private let recording: PulseAudioSource
    private var watcher: WorkerThread?

    /// How often a lost daemon is asked again.
    static let reconnectInterval = Duration.seconds(1)

    /// Follows the graph on `connection` with `linker`, reconnecting with `reconnect`.
    init(linker: ApplicationAudioLinker, connection: any PipeWireGraphConnection, recording: PulseAudioSource, name: String,
         notices: @escaping @Sendable (String) -> Void, report: @escaping @Sendable (SourceEvent) -> Void,
         reconnect: @escaping @Sendable () throws(ReelError) -> any PipeWireGraphConnection) {
        self.recording = recording
        let initial = Handoff((linker, connection))
        watcher = WorkerThread(name: "reel.app-audio") { thread in
            guard let (linker, first) = initial.take() else { return }
            var connection: (any PipeWireGraphConnection)? = first
            var attempts = AttemptPacer(interval: Self.reconnectInterval)
            while !thread.isStopRequested {
                guard let live = connection else {
                    guard attempts.napUntilDue(), let fresh = try? reconnect() else { continue }
                    linker.restart(on: fresh)
                    connection = fresh
                    notices("\(name): PipeWire is back; linking the applications' sound again")
                    continue
                }
                do throws(ReelError) {
                    try linker.handle(try live.nextEvents(timeoutMicroseconds: 50_000))
                } catch {
                    // The daemon went away: try again every second, as the recording does.
                    connection = nil
                    attempts.postpone()
                }
            }
        }
    }

    /// Stops following (the links go with the connection) and the recording (its sink goes).
    func finish() {
        watcher?.requestStop()
        watcher?.join()
        watcher = nil
        recording.stop()
    }
}

/// Paces the attempts to reach a server that went away: one an interval, napping briefly in
/// between so that the thread that tries notices a stop request soon.
struct AttemptPacer {
    let interval: Duration
    private let clock = ContinuousClock()
    private var next: ContinuousClock.Instant

    init(interval: Duration) {
        self.interval = interval
        next = clock.now
    }

    /// Naps 50 ms; returns whether an attempt is due (the next one is then due an interval later).
    mutating func napUntilDue() -> Bool {
        usleep(50_000)
        guard clock.now >= next else { return false }
        next = clock.now.advanced(by: interval)
        return true
    }

    /// The next attempt is due an interval from now.
    mutating func postpone() { next = clock.now.advanced(by: interval) }
}
