import Foundation
import ReelCore
import Synchronization

/// Says when the recording of chosen applications has recorded only digital silence (every
/// sample exactly zero) while they play, and why, as a microphone that is muted says it (issue
/// 26, F10): ``SourceEvent/silent(_:)``, ended (``SourceEvent/resumed``) by the first sound.
///
/// The user's mixer applies a stream's mute and volume where the stream is mixed, before any
/// recording can take its sound: PulseAudio as the sink mixes it (the relay the routing moved it
/// to mixes it with the stream's own mute and volume, and a monitor of the stream alone is taken
/// after them too), PipeWire in the stream's own node, before the ports the linking joins. So an
/// application muted, or at volume 0, in the mixer records as digital silence, and reel does not
/// change the user's mixer to record it: it says it. The words come from the mixer when the
/// silence is said: "'APP' is muted in the mixer", "… at volume 0 in the mixer", else "'APP'
/// played only digital silence" (paused, or muted in itself).
///
/// Follows ``DigitalSilenceWatch``'s rules: said once a second of it has been recorded (or at
/// the end, if shorter), and only while nothing has sounded since the start; an application
/// that plays silence for a while and then sound ends it (`resumed`), and the recording is
/// complete. When none of the chosen applications plays, what is said of a named application
/// that has not played says it (``ApplicationAudioReport/silent(_:)``): nothing is said here,
/// and the mixer is looked at again after another second of silence. When a chosen application
/// starts playing, or the recording is back after the audio server restarted, the second is
/// counted again (``restart()``).
final class ApplicationSilenceWatch: Sendable {
    private struct State {
        var watch: DigitalSilenceWatch
        /// Whether the silence is said and not ended.
        var said = false
    }

    private let rate: Int32
    private let state: Mutex<State>
    /// Why the recording is silent, in words, or `nil` when none of the chosen applications
    /// plays (it looks at the mixer: called on the thread that delivers, outside the lock).
    private let explain: @Sendable () -> ReelError?
    private let report: @Sendable (SourceEvent) -> Void
    /// The silences the routing or the linking said (named applications that have not played):
    /// said again after this watch's `resumed`, which ends every silence of the source.
    private let others: Silences
    /// Where the mixer is asked (see ``saySilence()``).
    private let lookups = DispatchQueue(label: "reel.app-audio.silence")

    init(rate: Int32, others: Silences, report: @escaping @Sendable (SourceEvent) -> Void, explain: @escaping @Sendable () -> ReelError?) {
        self.rate = rate
        self.others = others
        self.report = report
        self.explain = explain
        state = Mutex(State(watch: DigitalSilenceWatch(enabled: true, rate: rate)))
    }

    /// `buffer` was recorded (on the recording's thread): says the silence, or its end.
    func delivered(_ buffer: AudioBuffer) {
        let change = state.withLock { $0.watch.delivered(buffer.data, frames: buffer.frameCount) }
        switch change {
        case .silent?: saySilence()
        case .sounds?:
            let wasSaid = state.withLock { state in defer { state.said = false }; return state.said }
            guard wasSaid else { return }
            report(.resumed)
            for error in others.all { report(.silent(error)) }
        case nil: break
        }
    }

    /// Looks at the mixer and says why the recording is silent; with nothing to say yet (no
    /// chosen application plays), looks again after another second of silence. The mixer is
    /// asked on a queue of its own, not on the thread that delivers the sound (a lookup there
    /// held the sound up while the server answered); a sound heard meanwhile ends it unsaid.
    private func saySilence() {
        lookups.async { [self] in
            let words = explain()
            let say = state.withLock { state -> Bool in
                guard let _ = words, !state.watch.hasHeard else {
                    if words == nil { state.watch.postpone() }
                    return false
                }
                state.said = true
                return true
            }
            if say, let words { report(.silent(words)) }
        }
    }

    /// A chosen application started playing, or the recording is back on a restarted server
    /// (either ended what was said): the second of silence is counted from now, unless
    /// something has sounded already.
    func restart() {
        state.withLock { state in
            guard !state.watch.hasHeard else { return }
            state.watch = DigitalSilenceWatch(enabled: true, rate: rate)
            state.said = false
        }
    }

    /// Returns once a lookup of the mixer under way has said what it found (tests deliver
    /// faster than sound comes, and look at what was said after each buffer).
    package func settle() {
        lookups.sync {}
    }

    /// The recording ended (its thread is done): a silence shorter than a second, with a
    /// chosen application playing, is said now.
    func finish() {
        lookups.sync {}  // a lookup under way says what it found first
        guard state.withLock({ $0.watch.endsSilent }), let words = explain() else { return }
        report(.silent(words))
    }

    // MARK: - Words

    /// What is said of the recording of `choice`'s applications that recorded only digital
    /// silence, as `streams` (the server's playing streams) are now: which of the chosen
    /// applications are muted or at volume 0 in the mixer, and which played only digital
    /// silence; `nil` when none of them plays.
    static func words(streams: [PlayingStream], choice: ApplicationChoice) -> ReelError? {
        let chosen = streams.filter { !$0.isModuleStream && choice.takes(applicationName: $0.applicationName, binary: $0.binary, processID: $0.processID) }
        var labels: [String] = []
        for stream in chosen where !labels.contains(stream.label) { labels.append(stream.label) }
        guard !labels.isEmpty else { return nil }
        let streamsOf = { (label: String) in chosen.filter { $0.label == label } }
        // An application is muted when all its streams are; at volume 0 when all are that or muted.
        let muted = labels.filter { streamsOf($0).allSatisfy(\.isMuted) }
        let zero = labels.filter { !muted.contains($0) && streamsOf($0).allSatisfy { $0.isMuted || $0.isAtVolumeZero } }
        let quiet = labels.filter { !muted.contains($0) && !zero.contains($0) }
        let one = labels.count == 1
        func list(_ names: [String]) -> String {
            let quoted = names.map { "'\($0)'" }
            return quoted.count < 2 ? quoted.joined() : quoted.dropLast().joined(separator: ", ") + " and " + quoted.last!
        }
        func verb(_ names: [String]) -> String { names.count == 1 ? "is" : "are" }
        var parts: [String] = [], fixes: [String] = []
        if !muted.isEmpty {
            parts.append("\(list(muted)) \(verb(muted)) muted in the mixer")
            fixes.append("unmute \(one ? "it" : list(muted))")
        }
        if !zero.isEmpty {
            // At 0, or turned down so far (1 %) that nothing of it is left: said as it is.
            let loudest = zero.flatMap { streamsOf($0).compactMap(\.volumePercent) }.max() ?? 0
            let level = loudest == 0 ? "at volume 0 in the mixer"
                : "turned down to \(zero.count == 1 ? "" : "at most ")\(loudest) % in the mixer (too low to leave any sample above zero)"
            parts.append("\(list(zero)) \(verb(zero)) \(level)")
            fixes.append("turn \(one ? "it" : list(zero)) up")
        }
        if !quiet.isEmpty { parts.append("\(list(quiet)) played only digital silence") }
        let message = parts.joined(separator: ", and ") + ": every sample recorded of \(one ? "it" : "them") is digital silence (exactly zero)"
        let hint = fixes.isEmpty
            ? "it plays silence (paused, or muted in the application itself); its sound is recorded once it plays some"
            : fixes.joined(separator: ", ") + ", e.g. in pavucontrol: the mixer applies to the sound before it can be recorded, and reel leaves the mixer as the user set it"
        return ReelError(.sourceUnavailable, message, hint: hint)
    }
}

/// Looks at the mixer for ``ApplicationSilenceWatch``: the chosen applications' streams on the
/// PulseAudio server (pipewire-pulse's too), through one connection kept for the recording.
final class MixerLook: Sendable {
    private let routing: any PulseAudioRoutingServer
    private let server: String?
    private let choice: ApplicationChoice
    private let connection = Mutex<(any PulseAudioRoutingConnection)?>(nil)

    init(routing: any PulseAudioRoutingServer, server: String?, choice: ApplicationChoice) {
        self.routing = routing
        self.server = server
        self.choice = choice
    }

    /// The words for the silence (see ``ApplicationSilenceWatch/words(streams:choice:)``), or
    /// `nil` when none of the chosen applications plays or the server cannot be asked.
    func words() -> ReelError? {
        let routing = self.routing, server = self.server
        let streams = connection.withLock { connection -> [PlayingStream]? in
            // A connection lost since (the server restarted) is made again, once.
            for _ in 0..<2 {
                if connection == nil { connection = try? routing.connect(server: server, clientName: "Reel application audio") }
                guard let live = connection else { return nil }
                if let streams = try? live.playingStreams() { return streams }
                connection = nil
            }
            return nil
        }
        return streams.flatMap { ApplicationSilenceWatch.words(streams: $0, choice: choice) }
    }

    /// Lets the connection go.
    func close() {
        connection.withLock { $0 = nil }
    }
}
