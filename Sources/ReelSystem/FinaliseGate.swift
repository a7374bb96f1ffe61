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
/// before its step, only its placing is one, and the file and the copy are put on the disk
/// before the steps, so that a step's own syncs write little) and lets no other begin. The file is then as a
/// crash after that step leaves it (it plays, and recovering completes it), or finalised.
///
/// One gate per recording file, made with the file's lock (``RecordingLock/finaliseGate``) and
/// handed to whoever may abort the recording (a `Recorder` keeps its file's): never looked up
/// by the file's identity, since the inode of a file replaced by its finalised copy is free
/// for the next file the process makes, whose finalise the abort must not give up.
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

    package init(file: FileIdentity) { self.file = file }

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
        if let finishing {
            // Finalised in place: where the file is now, while it is still open (a user may
            // have renamed it as the recording stopped; once closed it cannot be found).
            let url = identity == nil ? Self.whereabouts(of: file, expected: finishing) : finishing
            state = .finished(url: url, identity: identity)
        }
        return result
    }

    /// Where the file `identity` is: at `expected`, or wherever this process has it open.
    private static func whereabouts(of identity: FileIdentity, expected: URL) -> URL {
        guard FileIdentity(expected) != identity else { return expected }
        return OpenFile.find(identity).flatMap { $0.isDeleted ? nil : $0.path } ?? expected
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
            return Self.whereabouts(of: identity ?? file, expected: url)
        case .open, .givenUp:
            state = .givenUp
            return nil
        }
    }
}
