import Foundation
import Synchronization
import Reel
import ReelSystem

/// What `reel record` does with each signal, at every moment of its life.
///
/// - INT, TERM, HUP (a closed terminal, a dropped SSH session) and QUIT stop the recording and
///   finalise the file. One that arrives while the session is still starting (a slow network
///   camera connecting) gives the start up: nothing is recorded and no file is written. A
///   second one aborts at once: the
///   file keeps everything up to its last fragment, and the message says how to finish it. A
///   third, while the abort waits for the stop's finalise step under way to reach the disk
///   (it says so after a second), ends the process at once.
///   (One process sending stop signals twice at once, as `timeout(1)` does, is one signal:
///   ``ProcessSignals`` drops the echo.)
/// - USR1 toggles pause (with `--replay`: saves the replay buffer instead), USR2 swaps the
///   composed pictures; with nothing to do (not recording yet, stopping, or a single picture)
///   each is ignored with a note.
/// - HUP is left ignored when the parent ignored it (`nohup`).
/// - A stop asked for otherwise (a key, `reel control stop`, the end of `--stop-at`) is asked
///   once: asked again while stopping it changes nothing and never aborts (only a stop signal
///   after it, or `reel control abort`, does).
///
/// The decisions are this value state machine's; ``RecordSignals`` acts on them.
struct RecordSignalLifecycle {
    enum Phase: Equatable {
        /// Handlers are in place; the session is starting. `stopRequested`: a stop signal came.
        case starting(stopRequested: Bool)
        /// Recording.
        case recording
        /// Stopping and finalising; `signalled`: a stop signal has come (the next one aborts).
        case stopping(signalled: Bool)
        /// The command is done with the recording (summary printed or failed).
        case finished
    }

    /// What the owner does.
    enum Action: Equatable {
        case none
        /// Give up the start that is under way (the session stops what it opened).
        case stopWhileStarting
        /// Stop the session now.
        case stop
        /// Say that the recording is already stopping (by itself) and the next signal aborts.
        case alreadyStopping
        /// Abort at once (a second stop signal).
        case abort
        case togglePause
        /// Save the replay buffer (`--replay`: USR1 saves rather than pauses).
        case saveReplay
        case swap
        /// Ignore the signal, saying why.
        case ignore(reason: String)
    }

    private(set) var phase: Phase = .starting(stopRequested: false)
    let canSwap: Bool
    /// Whether USR1 saves the replay buffer (`--replay`) rather than toggling pause.
    let usr1SavesReplay: Bool

    init(canSwap: Bool, usr1SavesReplay: Bool = false) {
        self.canSwap = canSwap
        self.usr1SavesReplay = usr1SavesReplay
    }

    mutating func stopSignal() -> Action {
        switch phase {
        case .starting(stopRequested: false):
            phase = .starting(stopRequested: true)
            return .stopWhileStarting
        case .starting(stopRequested: true), .stopping(signalled: true):
            return .abort
        case .stopping(signalled: false):
            phase = .stopping(signalled: true)
            return .alreadyStopping
        case .recording:
            phase = .stopping(signalled: true)
            return .stop
        case .finished:
            return .none
        }
    }

    /// A stop asked for by a request, not a signal: `.none` when one is already under way.
    mutating func stopRequest() -> Action {
        switch phase {
        case .starting(stopRequested: false), .recording:
            return stopSignal()
        case .starting(stopRequested: true), .stopping, .finished:
            return .none
        }
    }

    /// The session has started; returns `.stop` if a stop signal came while it started.
    mutating func started() -> Action {
        guard case .starting(let requested) = phase else { return .none }
        phase = requested ? .stopping(signalled: true) : .recording
        return requested ? .stop : .none
    }

    /// The recording stopped by itself (a limit, a key, a failure).
    mutating func stopping() {
        if case .recording = phase { phase = .stopping(signalled: false) }
    }

    mutating func finished() { phase = .finished }

    /// Whether a stop signal (or key) ended the recording.
    var stopWasRequested: Bool {
        if case .stopping(signalled: true) = phase { return true }
        return false
    }

    func pauseSignal() -> Action {
        switch phase {
        case .recording: return usr1SavesReplay ? .saveReplay : .togglePause
        case .starting: return .ignore(reason: "the recording has not started yet")
        case .stopping, .finished: return .ignore(reason: "the recording is stopping")
        }
    }

    func swapSignal() -> Action {
        guard canSwap else { return .ignore(reason: "there is one picture, nothing to swap (swapping needs two video sources)") }
        switch phase {
        case .recording: return .swap
        case .starting: return .ignore(reason: "the recording has not started yet")
        case .stopping, .finished: return .ignore(reason: "the recording is stopping")
        }
    }
}

/// The owner of ``RecordSignalLifecycle``: answers the signals for one `reel record`.
final class RecordSignals: @unchecked Sendable {
    private let lock = NSLock()
    private var lifecycle: RecordSignalLifecycle
    private let console: Console
    private let stop: @Sendable () -> Void
    private let togglePause: @Sendable () -> Void
    private let saveReplay: (@Sendable () -> Void)?
    private let swap: @Sendable () -> Void
    private let abortMessage: @Sendable () -> String
    /// What ending at once, while the abort waits, leaves and says (see ``abortOffTheSignalThread()``).
    private let leaveAtOnce: @Sendable () -> String
    /// Hears a signal ignored and why (the renderer says it as a JSON event too: a script
    /// that sent it can tell nothing happened).
    var ignored: (@Sendable (_ signal: String, _ reason: String) -> Void)?
    /// Before a scheduled start (`--delay`, `--start-at`): what pausing or resuming answers
    /// ("not recording yet; it starts in 2 s"); `nil` once recording has begun. SIGUSR1 then
    /// changes nothing (it toggled the recorder's pause during the countdown, and the recording
    /// came out shorter than its --duration, said complete: s5 F8).
    var waiting: (@Sendable () -> String?)? {
        get { lock.withLock { waitingAnswer } }
        set { lock.withLock { waitingAnswer = newValue } }
    }
    private var waitingAnswer: (@Sendable () -> String?)?

    /// Takes over the signals. `stop` stops the session; `abortMessage` says, at the moment of
    /// an abort, what is on disk and how to finish it; `saveReplay`, if given, is what USR1
    /// does instead of toggling pause.
    init(console: Console, canSwap: Bool, stop: @escaping @Sendable () -> Void,
         togglePause: @escaping @Sendable () -> Void, saveReplay: (@Sendable () -> Void)? = nil,
         swap: @escaping @Sendable () -> Void, abortMessage: @escaping @Sendable () -> String,
         leaveAtOnce: @escaping @Sendable () -> String = { "reel: aborted without waiting" }) {
        self.console = console
        self.lifecycle = RecordSignalLifecycle(canSwap: canSwap, usr1SavesReplay: saveReplay != nil)
        self.stop = stop
        self.togglePause = togglePause
        self.saveReplay = saveReplay
        self.swap = swap
        self.abortMessage = abortMessage
        self.leaveAtOnce = leaveAtOnce
        let signals = ProcessSignals.shared
        signals.setHandler(ProcessSignals.stopping) { [weak self] signo in self?.stopSignal(signo) }
        signals.setHandler([SIGUSR1]) { [weak self] signo in self?.act(on: signo, pause: true) }
        signals.setHandler([SIGUSR2]) { [weak self] signo in self?.act(on: signo, pause: false) }
    }

    private func decide(_ body: (inout RecordSignalLifecycle) -> RecordSignalLifecycle.Action) -> RecordSignalLifecycle.Action {
        lock.lock(); defer { lock.unlock() }
        let action = body(&lifecycle)
        if action == .abort { aborting = true }
        return action
    }

    /// An abort is under way: it says what is on the disk and ends the process.
    private var aborting = false

    /// Waits for ever if an abort is under way, which ends the process once it has said what
    /// is on the disk: the command must not end first with an exit status and words of its
    /// own (the stop's finalise that the abort gave up fails; the abort said "aborted").
    func holdWhileAborting() {
        while lock.withLock({ aborting }) { sleep(1) }
    }

    /// A stop asked for by a signal: a second one aborts. During an abort asked for by name
    /// (`reel control abort`), one more stop signal is what a third is after two: it leaves at
    /// once (a stop beside the abort would finalise what the abort gives up).
    private func stopSignal(_ signo: Int32) {
        if lock.withLock({ abortUnderWay }) { return abortOffTheSignalThread() }
        perform(decide { $0.stopSignal() }, signo: signo, fromKey: false)
    }

    /// A stop asked for by a key (`q`, Enter, the preview's stop), `reel control stop` or the
    /// schedule. Asked again while stopping (an impatient second `reel control stop`), it
    /// changes nothing: returns `false`, and the file is finalised all the same.
    @discardableResult func requestStop() -> Bool {
        // An abort under way ends the process; a stop beside it would finalise what it gives up.
        guard !lock.withLock({ abortUnderWay }) else { return false }
        let action = decide { $0.stopRequest() }
        perform(action, signo: SIGINT, fromKey: true)
        return action != .none
    }

    /// Aborts at once, as a second stop signal does (`reel control abort`): `before` runs first
    /// (the control socket is removed), then the message says what is on disk, and the process
    /// exits with 130. During an abort already under way (a second stop signal's) it only runs
    /// `before`: that abort says what is on the disk and ends the process, and a second
    /// `Recorder.abort()` beside it would say it twice, each perhaps differently.
    func abort(before: () -> Void) {
        let first = lock.withLock { () -> Bool in
            aborting = true
            defer { abortUnderWay = true }
            return !abortUnderWay
        }
        before()
        if first { sayWhatTheAbortLeftAndExit() }
    }

    /// The exit status of an aborted recording, whatever asked for the abort.
    static let abortedStatus: Int32 = 128 + SIGINT

    private func act(on signo: Int32, pause: Bool) {
        var action = decide { pause ? $0.pauseSignal() : $0.swapSignal() }
        if pause, action == .togglePause || action == .saveReplay, let reason = waiting?() {
            action = .ignore(reason: reason)
        }
        perform(action, signo: signo, fromKey: false)
    }

    private func perform(_ action: RecordSignalLifecycle.Action, signo: Int32, fromKey: Bool) {
        switch action {
        case .none:
            break
        case .alreadyStopping:
            clearLine()
            console.err("Already stopping, finalising the file… (press Ctrl-C again to abort)")
        case .stopWhileStarting:
            clearLine()
            // Whether anything was recorded is not known yet (the first frame may come while
            // the start ends): the end says what was kept.
            console.err("Stopping… (press Ctrl-C again to abort)")
            stop()
        case .stop:
            clearLine()
            if !fromKey { console.err("Stopping… (press Ctrl-C again to abort)") }
            stop()
        case .abort:
            abortOffTheSignalThread()
        case .togglePause:
            togglePause()
        case .saveReplay:
            saveReplay?()
        case .swap:
            swap()
        case .ignore(let reason):
            console.err("reel: note: \(ProcessSignals.name(signo)) ignored: \(reason)")
            ignored?(ProcessSignals.name(signo), reason)
        }
    }

    /// Whether the abort's words are being made (see ``abortOffTheSignalThread()``).
    private var abortUnderWay = false

    /// Says what the abort leaves on the disk and ends the process, on a thread of its own:
    /// the abort waits for the finalise step under way (a write and its sync; on a dead network
    /// disk, for ever), and meanwhile the signals are still read. Slow, it says what it waits
    /// for; one more stop signal then ends the process at once, the file as that step leaves it.
    private func abortOffTheSignalThread() {
        let again = lock.withLock { () -> Bool in
            defer { abortUnderWay = true }
            return abortUnderWay
        }
        if again {
            // Not while a file deleted as it was recorded is copied back: its content goes
            // with the process.
            guard OpenFile.copyingBack.load(ordering: .relaxed) == 0 else {
                console.err("reel: aborting: copying back a recording that was deleted while it was recorded; "
                            + "ending now would lose it (SIGKILL would)")
                return
            }
            console.err(leaveAtOnce())
            _exit(Self.abortedStatus)
        }
        sayWhatTheAbortLeftAndExit()
    }

    /// Runs the abort and says what it leaves on the disk, then ends the process, on a thread
    /// of its own (see ``abortOffTheSignalThread()``); after a second, says what it waits for.
    private func sayWhatTheAbortLeftAndExit() {
        clearLine()
        let console = console, message = abortMessage
        let spoken = Mutex(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + 1) {
            guard !spoken.withLock({ $0 }) else { return }
            console.err("reel: aborting: waiting for the file to be left as it plays (a finalise step or the "
                        + "start under way)… (press Ctrl-C again to leave at once)")
        }
        Thread.detachNewThread {
            let words = message()
            spoken.withLock { $0 = true }
            console.err(words)
            // 130 whichever stop signal it was, as --help documents for an aborted recording:
            // a second SIGTERM (a service manager's, a script's) exited 143, which says "killed
            // by SIGTERM" to whoever reads it, where the file was left for `reel recover`.
            _exit(Self.abortedStatus)
        }
    }

    private func clearLine() {
        if console.isTerminal { console.errRaw("\r\u{1B}[2K") }
    }

    /// The session has started: stops it now if a stop signal came while it started.
    func started() {
        if decide({ $0.started() }) == .stop { stop() }
    }

    /// Whether a stop signal or key ended the recording.
    var stopWasRequested: Bool {
        lock.lock(); defer { lock.unlock() }
        return lifecycle.stopWasRequested
    }

    /// Whether a stop signal came while the session was being made (a region being picked).
    var stopCameWhileStarting: Bool {
        lock.lock(); defer { lock.unlock() }
        return lifecycle.phase == .starting(stopRequested: true)
    }

    /// The recording is ending by itself.
    func stopping() { _ = decide { $0.stopping(); return .none } }

    /// The command is done: later stop signals do nothing, and the default answers return
    /// once the command has returned.
    func finished() {
        holdWhileAborting()
        _ = decide { $0.finished(); return .none }
    }
}
