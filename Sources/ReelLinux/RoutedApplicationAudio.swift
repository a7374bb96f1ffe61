import Foundation
import ReelCore
import Synchronization

/// A running recording of application audio on a PulseAudio server: the routing
/// (`ApplicationAudioRouter`), the record stream of its sink, the guard, and the thread that
/// follows new streams and the audio server.
///
/// When the audio server goes away (restarted), the record stream says so (interrupted) and
/// reconnects every second on its own; this thread reconnects too, makes the recorded sink
/// again on the new server, and once the record stream is back on it, routes the chosen
/// applications again: the source resumes with their sound. A server that comes back but
/// refuses the routing ends the source (lost), and so does a recorded sink that another program
/// unloads.
final class RoutedApplicationAudio: @unchecked Sendable {
    private let router: ApplicationAudioRouter
    private let recording: PulseAudioSource
    private let guardian: RoutingGuard?
    private var watcher: WorkerThread?
    /// Set when the record stream is back after a loss: the routing may start again.
    private let recordingBack: ReturnFlag

    /// How often the watching thread checks that the recorded sink is still there.
    static let sinkCheckInterval = Duration.milliseconds(250)
    /// How often a lost server is asked again.
    static let reconnectInterval = Duration.seconds(1)

    /// Everything the running recording needs, made by ``ApplicationAudioSource/start(_:)``.
    struct Parts {
        var router: ApplicationAudioRouter
        var connection: any PulseAudioRoutingConnection
        var recording: PulseAudioSource
        var guardian: RoutingGuard?
        var recordingBack: ReturnFlag
        /// Reconnects to the audio server.
        var reconnect: @Sendable () throws(ReelError) -> any PulseAudioRoutingConnection
    }

    init(_ parts: Parts, name: String, notices: @escaping @Sendable (String) -> Void,
         report: @escaping @Sendable (SourceEvent) -> Void) {
        router = parts.router
        recording = parts.recording
        guardian = parts.guardian
        recordingBack = parts.recordingBack
        let initial = Handoff(parts.connection)
        let reconnect = parts.reconnect
        watcher = WorkerThread(name: "reel.app-audio") { [self] thread in
            let clock = ContinuousClock()
            var connection: (any PulseAudioRoutingConnection)? = initial.take()
            var nextCheck = clock.now
            var attempts = AttemptPacer(interval: Self.reconnectInterval)
            // On a restarted server: the sink is made; the routing waits for the record stream.
            var waitingForRecording = false
            while !thread.isStopRequested {
                guard let live = connection else {
                    guard attempts.napUntilDue(), let fresh = try? reconnect() else { continue }
                    do throws(ReelError) {
                        try router.restart(on: fresh)
                        try router.setUp()
                        try fresh.subscribeToStreams()
                        connection = fresh
                        waitingForRecording = true
                        notices("\(name): the audio server is back; routing the applications' sound again")
                    } catch {
                        return giveUp(report, ReelError(.sourceUnavailable, "\(name) cannot route the applications' sound on the restarted audio server: \(error.message)",
                                                        hint: "the server came back but refused the routing; record again once 'pactl info' answers"))
                    }
                    continue
                }
                do throws(ReelError) {
                    try router.handle(try live.nextEvents(timeoutMicroseconds: 50_000))
                    if waitingForRecording && recordingBack.isSet {
                        waitingForRecording = false
                        try router.startRouting(again: true)
                    }
                    guard !waitingForRecording, clock.now >= nextCheck else { continue }
                    nextCheck = clock.now.advanced(by: Self.sinkCheckInterval)
                    let sink = router.recordedSink
                    guard try !live.sinkNames().contains(sink) else { continue }
                    // Someone unloaded the recorded sink: nothing can be recorded any more (its
                    // monitor is gone), so the source is lost rather than retried for ever; the
                    // chosen streams go back to their sinks now.
                    return giveUp(report, ReelError(.sourceUnavailable,
                                                    "\(name) can no longer be recorded: the sink reel made to record it was unloaded by another program while recording",
                                                    hint: "the chosen applications play on their own sinks again; record again to record them"))
                } catch {
                    // The server went away (restarted): try again every second, as the record
                    // stream does. Anything else is said, and the following goes on.
                    if (try? live.defaultSink()) == nil {
                        connection = nil
                        waitingForRecording = false
                        attempts.postpone()
                    } else {
                        report(.incomplete(ReelError(.sourceUnavailable, "\(name) could not route a chosen application's stream: \(error.message)")))
                    }
                }
            }
        }
    }

    /// Ends the source for good: the record stream stops, the routing is put back, and `error`
    /// is reported as the source's loss.
    private func giveUp(_ report: @Sendable (SourceEvent) -> Void, _ error: ReelError) {
        recording.stop()
        router.restore()
        report(.lost(error))
    }

    /// Stops following, stops the record stream, puts the routing back and releases the guard.
    func finish() {
        watcher?.requestStop()
        watcher?.join()
        recording.stop()
        router.restore()
        guardian?.release()
    }
}

/// Whether a record stream is there: cleared when it is lost, set when it is back, from its
/// thread; read by the thread that routes.
final class ReturnFlag: Sendable {
    private let flag = Atomic<Bool>(true)
    /// Notes that the record stream is back.
    func set() { flag.store(true, ordering: .sequentiallyConsistent) }
    /// Notes that it was lost.
    func clear() { flag.store(false, ordering: .sequentiallyConsistent) }
    /// Whether it is back.
    var isSet: Bool { flag.load(ordering: .sequentiallyConsistent) }
}
