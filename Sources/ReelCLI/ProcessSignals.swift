import Foundation
import ReelSystem

/// The signals a terminal or a service manager may send reel, and who answers each.
///
/// ``interceptSignals()`` is `main`'s first statement, before its first `await`. From then on
/// INT, TERM, HUP, QUIT, USR1 and USR2 never kill reel: each is caught by a handler that only
/// writes its number into a pipe. ``install(console:)`` starts the thread that reads the pipe
/// and answers them, once the command has said what each does (``setHandler(_:_:)``): a signal
/// sent in the first milliseconds waits in the pipe until then, never fatal and never lost.
/// (Blocking them is not enough: Swift's async `main` parks the main thread in libdispatch's
/// `sigsuspend` with every signal unblocked, and a parent may have left them blocked or
/// ignored.) SIGPIPE is ignored: a closed standard output is an error on write, noted by
/// ``Console``, not a death.
///
/// A signal that arrives while no command has a handler for it does what it does by default:
/// INT, TERM, HUP and QUIT end reel as the signal would (nothing is being written then), USR1
/// and USR2 are ignored with a note on standard error. SIGHUP stays ignored when the parent
/// ignored it on purpose (`nohup`).
///
/// Before `main` the dynamic loader spends 20 ms and more loading reel's libraries; a signal
/// sent then would do what it does by default. An installed `reel` is therefore a launcher
/// (`scripts/launcher/reel.c`) that blocks these signals and execs this program: they stay
/// pending until ``interceptSignals()`` has caught them and unblocks them.
public final class ProcessSignals: @unchecked Sendable {
    /// The signals reel answers.
    public static let handled: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2]

    /// The signals that stop a recording (and end other commands).
    static let stopping: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    /// The one instance, reading the process's signals.
    public static let shared = ProcessSignals()

    private let lock = NSLock()
    private var handlers: [Int32: @Sendable (Int32) -> Void] = [:]
    private var intercepted = false
    private var reading = false
    /// The pipe's read end (the handler writes into ``signalPipe``).
    private var pipeReader: Int32 = -1
    /// SIGHUP was ignored by whoever started reel (`nohup`): it keeps being ignored.
    private var hangUpIgnoredByParent = false
    private var console = Console()

    /// Catches the signals reel answers (their numbers wait in a pipe until ``install(console:)``
    /// reads them) and ignores SIGPIPE. Call it first thing in `main`.
    public static func interceptSignals() {
        shared.intercept()
    }

    private func intercept() {
        lock.lock()
        defer { lock.unlock() }
        guard !intercepted else { return }
        intercepted = true
        signal(SIGPIPE, SIG_IGN)
        var previous = sigaction()
        sigaction(SIGHUP, nil, &previous)
        hangUpIgnoredByParent = unsafeBitCast(previous.__sigaction_handler.sa_handler, to: Int.self)
            == unsafeBitCast(SIG_IGN, to: Int.self)
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }  // install() says so; the signals keep their default action
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(fds[1], F_SETFL, O_NONBLOCK)  // a full pipe drops the signal rather than block the handler
        signalPipe = fds[1]
        pipeReader = fds[0]
        var set = sigset_t()
        sigemptyset(&set)
        for signo in Self.handled where !(signo == SIGHUP && hangUpIgnoredByParent) {
            var action = sigaction()
            action.__sigaction_handler.sa_sigaction = forwardSignal
            action.sa_flags = SA_RESTART | SA_SIGINFO
            sigfillset(&action.sa_mask)
            sigaction(signo, &action, nil)
            sigaddset(&set, signo)
        }
        // Caught now, they may be delivered: a parent may have left them blocked.
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Starts answering the signals (once); those that came earlier are answered now, so a
    /// command sets its handlers first. `console` is where notes about ignored signals go.
    public func install(console: Console) {
        intercept()  // a host that did not call interceptSignals() (tests)
        lock.lock()
        defer { lock.unlock() }
        self.console = console
        guard !reading else { return }
        reading = true
        let reader = pipeReader
        guard reader >= 0 else {
            console.err("reel: warning: cannot set up signal handling; Ctrl-C will end reel without finalising")
            return
        }
        let waiter = Thread { [unowned self] in
            // Each record is written whole by one write(2) of less than PIPE_BUF bytes.
            var record = SignalRecord()
            let size = MemoryLayout<SignalRecord>.size
            while case .success(size) = Syscall.attempt({ read(reader, &record, size) }) { self.deliver(record) }
        }
        waiter.name = "reel.signals"
        waiter.start()
    }

    /// Makes `handler` answer `signals` from now on (replacing any earlier handler of them).
    func setHandler(_ signals: [Int32], _ handler: @escaping @Sendable (Int32) -> Void) {
        lock.lock()
        defer { lock.unlock() }
        for signo in signals { handlers[signo] = handler }
    }

    /// Goes back to the default answer for `signals`.
    func removeHandler(_ signals: [Int32]) {
        lock.lock()
        defer { lock.unlock() }
        for signo in signals { handlers[signo] = nil }
    }

    /// The stop signal last answered, who sent it and when (see ``isEcho(_:)``).
    private var lastStop: (record: SignalRecord, at: ContinuousClock.Instant)?

    /// How close together two stop signals from one process are one request (see ``isEcho(_:)``):
    /// long enough for two signals sent back to back to be read on a busy machine, short
    /// enough that a script's `kill; sleep 0.1; kill` is the abort it asks for (at 250 ms the
    /// second was taken for an echo and dropped: s5 F3).
    static let echoWindow = Duration.milliseconds(40)

    /// Whether `record` repeats the stop signal just answered: a stop signal from the same
    /// process within ``echoWindow``. `timeout(1)` sends its signal twice, to reel and to its
    /// process group, microseconds apart; systemd with `SendSIGHUP=yes` follows its SIGTERM with
    /// a SIGHUP at once. Taken as a second request it would abort the recording its sender only
    /// meant to stop. A key (Ctrl-C comes from the kernel, not a process) always counts, as does
    /// a signal sent again later or by another process.
    private func isEcho(_ record: SignalRecord) -> Bool {
        guard Self.stopping.contains(record.signo) else { return false }
        let now = ContinuousClock.now
        defer { lastStop = (record, now) }
        guard record.sentByProcess, let last = lastStop else { return false }
        return last.record.sentByProcess && last.record.sender == record.sender && now - last.at < Self.echoWindow
    }

    private func deliver(_ record: SignalRecord) {
        let signo = record.signo
        lock.lock()
        // A hang-up ignored under nohup is no stop: it neither counts nor makes the next an echo.
        let ignoredHangUp = signo == SIGHUP && hangUpIgnoredByParent
        let echo = !ignoredHangUp && isEcho(record)
        let handler = handlers[signo]
        let console = self.console
        lock.unlock()
        if ignoredHangUp || echo { return }
        if let handler {
            handler(signo)
            return
        }
        switch signo {
        case SIGUSR1, SIGUSR2:
            console.err("reel: note: \(Self.name(signo)) ignored: nothing is being recorded")
        default:
            // No command is writing anything: end as the signal would.
            Self.dieBy(signo)
        }
    }

    /// Ends the process by `signo`'s default action, as if it had never been caught.
    static func dieBy(_ signo: Int32) -> Never {
        signal(signo, SIG_DFL)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, signo)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        raise(signo)
        _exit(128 + signo)
    }

    /// A signal's name as a user knows it, such as `SIGUSR1`.
    static func name(_ signo: Int32) -> String {
        switch signo {
        case SIGINT: return "SIGINT"
        case SIGTERM: return "SIGTERM"
        case SIGHUP: return "SIGHUP"
        case SIGQUIT: return "SIGQUIT"
        case SIGUSR1: return "SIGUSR1"
        case SIGUSR2: return "SIGUSR2"
        case SIGPIPE: return "SIGPIPE"
        default: return "signal \(signo)"
        }
    }
}

/// The write end of the pipe ``ProcessSignals`` reads; set once, before any handler runs.
nonisolated(unsafe) private var signalPipe: Int32 = -1

/// A caught signal as the handler passes it on: its number and who sent it.
struct SignalRecord: Equatable {
    var signo: Int32 = 0
    /// `si_code`: `SI_USER` (0) or `SI_QUEUE` for a process's `kill`/`sigqueue`, `SI_KERNEL`
    /// for a key on the terminal.
    var code: Int32 = 0
    /// The sending process for `SI_USER`/`SI_QUEUE`, else 0.
    var sender: Int32 = 0

    /// Whether a process sent it (rather than the kernel, for a key on the terminal).
    var sentByProcess: Bool { (code == SI_USER || code == SI_QUEUE) && sender > 0 }
}

/// The signal handler: async-signal-safe, it only writes the signal and its sender into the pipe.
private let forwardSignal: @convention(c) (Int32, UnsafeMutablePointer<siginfo_t>?, UnsafeMutableRawPointer?) -> Void = { signo, info, _ in
    let saved = errno
    var record = SignalRecord(signo: signo)
    if let info {
        record.code = info.pointee.si_code
        if record.code == SI_USER || record.code == SI_QUEUE { record.sender = info.pointee._sifields._kill.si_pid }
    }
    _ = write(signalPipe, &record, MemoryLayout<SignalRecord>.size)
    errno = saved
}
