import Foundation
import Dispatch
import Reel

/// Keys on a terminal while recording: space pauses and resumes, `s` swaps the composed
/// pictures, `f` steps through the looks, `m` puts a chapter marker, `r` saves the replay buffer (`--replay`), `q` or Enter stops (SIGUSR1 and SIGUSR2
/// do the first two, or with `--replay` SIGUSR1 saves: ``RecordSignals``).
/// The terminal's settings are restored when done.
final class KeyControls: @unchecked Sendable {
    private var saved = termios()
    private var rawMode = false
    private var reader: Thread?
    private let lock = NSLock()
    private var cancelled = false

    init(recorder: Recorder, compositor: Compositor? = nil, console: Console, interactive: Bool,
         saveReplay: (@Sendable () -> Void)? = nil, actions: RecordKeyActions? = nil, stop: @escaping @Sendable () -> Void) {
        guard interactive, isatty(STDIN_FILENO) == 1, tcgetattr(STDIN_FILENO, &saved) == 0 else { return }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        raw.c_cc.6 = 0   // VMIN: return as soon as there is input or the timeout passes
        raw.c_cc.5 = 2   // VTIME: tenths of a second
        guard tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0 else { return }
        rawMode = true
        let thread = Thread { [weak self] in
            var byte: UInt8 = 0
            while let self, !self.isCancelled {
                let n = read(STDIN_FILENO, &byte, 1)
                guard n == 1 else { continue }
                switch byte {
                case UInt8(ascii: " "), UInt8(ascii: "p"):
                    if let actions { actions.togglePause() } else { try? recorder.togglePause() }
                case UInt8(ascii: "s"):
                    compositor?.swap()
                case UInt8(ascii: "m"):
                    if let actions { actions.mark() } else { try? recorder.addMarker() }
                case UInt8(ascii: "r"):
                    saveReplay?()
                case UInt8(ascii: "f"):
                    actions?.cycleFilter?()
                case UInt8(ascii: "q"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                    stop()
                    return
                default:
                    break
                }
            }
        }
        thread.start()
        reader = thread
    }

    /// The filters after `current` in the cycle none → mono → comic → crystal → none. With a
    /// graph of the user's own (`own`, from --filter) the looks go on top of it and it never
    /// goes: own → own, mono → own, comic → own, crystal → own. That graph may be what keeps
    /// part of the screen private (a crop, a blur), so a key pressed to try a look must never
    /// record the whole picture. A chain not in the cycle (set through the control socket)
    /// steps to where the cycle begins.
    static func looks(after current: [VideoFilter], own: VideoFilter? = nil) -> [VideoFilter] {
        let base = own.map { $0.look == nil ? [$0] : [] } ?? []
        let cycle = [base] + VideoFilter.Look.allCases.map { base + [VideoFilter.look($0)] }
        guard let index = cycle.firstIndex(of: current) else { return base }
        return cycle[(index + 1) % cycle.count]
    }

    /// How a chain of filters is named on the status line.
    static func describe(_ chain: [VideoFilter]) -> String {
        chain.isEmpty ? "none" : chain.map(\.description).joined(separator: ", then ")
    }

    private var isCancelled: Bool {
        lock.lock(); defer { lock.unlock() }
        return cancelled
    }

    /// Whether keys are being read.
    var isInteractive: Bool { rawMode }

    /// Restores the terminal and stops listening.
    func cancel() {
        lock.lock()
        cancelled = true
        lock.unlock()
        if rawMode {
            tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            rawMode = false
        }
    }
}
