import Foundation
import Synchronization

/// Puts the finalise of a recording's file and an abort of the recording (a second Ctrl-C
/// while the stop finalises) in one order, so that what the abort says of the file stays true.
///
/// Without it the abort looked at the file while the finalise changed it: it read a file half
/// way between two steps as holding nothing and removed it, took a finalised copy that had
/// just taken the file's name for somebody else's file and said nothing had been recorded, or
/// named the fragmented file at the hidden name the copy was swapping it out through.
///
/// Every change a finalise makes to the recording's file (a step written and made durable,
/// a finalised copy taking the file's place) runs as a ``step(finishing:_:)``; the abort
/// calls ``giveUp()``, which waits for the step under way (a step is short: the copy is made
/// before its step, only its placing is one) and lets no other begin. The file is then as a
/// crash after that step leaves it (it plays, and recovering completes it), or finalised.
///
/// One gate per file (its identity), made by whichever comes first; a new recording file
/// (``opened(_:)``) gets a fresh one, so a gate of an earlier file whose inode it reuses
/// never speaks for it.
package final class FinaliseGate: @unchecked Sendable {
    private enum State {
        /// Steps may run.
        case open
        /// The finalise is complete: the finished file is at `url` (identity `identity`).
        case finished(url: URL, identity: FileIdentity?)
        /// An abort gave the finalise up: no step runs any more.
        case givenUp
    }

    /// Held while a step runs, and while an abort looks at the state.
    private let lock = NSLock()
    private var state = State.open
    /// The recording's file.
    private let file: FileIdentity

    private static let gates = Mutex<[FileIdentity: FinaliseGate]>([:])

    private init(file: FileIdentity) { self.file = file }

    /// The gate of the finalise of `file` (made if there is none yet).
    package static func of(_ file: FileIdentity) -> FinaliseGate {
        gates.withLock { gates in
            if let gate = gates[file] { return gate }
            let gate = FinaliseGate(file: file)
            gates[file] = gate
            return gate
        }
    }

    /// A recording's file `file` was made: its finalise is still to come (a gate kept for an
    /// earlier file with the same identity, gone since, is dropped).
    package static func opened(_ file: FileIdentity) {
        gates.withLock { _ = $0.removeValue(forKey: file) }
    }

    /// What a finalise given up by an abort throws from the step it did not run: the file is
    /// as the last step left it.
    package struct GivenUp: Error, CustomStringConvertible {
        package var description: String { "the finalise was given up by an abort" }
    }

    /// Runs `body`, one step of the finalise, unless an abort has given the finalise up (then
    /// throws ``GivenUp`` without running it). With `finishing`, the step completes the
    /// finalise and the finished file is at that URL (an abort from then on says so);
    /// `identity` is that file's, if it is not the gate's own (a copy that took its place).
    package func step<R>(finishing: URL? = nil, identity: FileIdentity? = nil, _ body: () throws -> R) throws -> R {
        lock.lock()
        defer { lock.unlock() }
        guard case .open = state else { throw GivenUp() }
        let result = try body()
        if let finishing { state = .finished(url: finishing, identity: identity) }
        return result
    }

    /// Runs `body`, the step that completes the finalise by putting a finalised copy in the
    /// file's place, unless an abort has given the finalise up (then throws ``GivenUp``);
    /// `body` returns where the copy is now, which an abort from then on names.
    package func placingStep(_ body: () throws -> URL) throws -> URL {
        lock.lock()
        defer { lock.unlock() }
        guard case .open = state else { throw GivenUp() }
        let placed = try body()
        state = .finished(url: placed, identity: FileIdentity(placed))
        return placed
    }

    /// Gives the finalise up: waits for a step under way to end, and lets no other begin.
    /// Returns where the finished file is if the finalise was complete by then (`nil`: the
    /// file is as the last step, if any, left it).
    package func giveUp() -> URL? {
        lock.lock()
        defer { lock.unlock() }
        switch state {
        case .finished(let url, let identity):
            // Where it is now, if it was moved since (a user tidying up as the recording stopped).
            let identity = identity ?? file
            guard FileIdentity(url) != identity else { return url }
            return OpenFile.find(identity).flatMap { $0.isDeleted ? nil : $0.path } ?? url
        case .open, .givenUp:
            state = .givenUp
            return nil
        }
    }
}
