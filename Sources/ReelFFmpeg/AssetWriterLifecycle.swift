import ReelCore

/// The life of an ``AssetWriter`` as a value, as `AVAssetWriter.Status` and its session:
/// unknown → writing → completed, failed or cancelled, and within writing a session that
/// starts at a source time and may end at one. Each call says what the writer is to do (go on,
/// fail with an error, or do nothing); the writer acts on it under its lock (opening and
/// finishing the file, waking inputs). A call in the wrong state gets the error that
/// `AVAssetWriter` would raise as an exception.
package struct AssetWriterLifecycle: Sendable, Hashable {
    /// Where the writer is. `finishing` shows as ``AssetWriter/Status/writing``: the file is
    /// being finished, and nothing more is taken.
    private enum Phase: Sendable, Hashable {
        case unknown, writing, finishing, completed, failed, cancelled
    }

    /// The span of source times that goes into the file.
    package enum Session: Sendable, Hashable {
        /// Not started: a writer made in `AVAssetWriter`'s shape takes nothing yet, one made
        /// with a configuration starts at zero.
        case notStarted
        /// Started at a source time, which is the file's zero.
        case started(at: MediaTime)
        /// Ended: media from `end` on is not in the file.
        case ended(start: MediaTime, end: MediaTime)
    }

    /// What the writer does about a call.
    package enum Decision: Sendable, Hashable {
        /// Go on.
        case proceed
        /// Fail the writer with this error (a misuse).
        case fail(ReelError)
        /// Nothing: the writer has ended, and says how in its status.
        case ignore

        /// The error of `.fail`.
        package var error: ReelError? {
            if case .fail(let error) = self { return error }
            return nil
        }
    }

    private var phase = Phase.unknown
    /// The writer's session.
    package private(set) var session = Session.notStarted
    /// Whether media has been appended (a session can no longer start).
    package private(set) var appendedAnything = false
    /// Whether appends need a session started first (the writer was made in
    /// `AVAssetWriter`'s shape).
    package let needsSession: Bool

    /// A writer's life from its making; `needsSession` for `AVAssetWriter`'s shape.
    package init(needsSession: Bool) {
        self.needsSession = needsSession
    }

    /// The status the writer shows.
    package var status: AssetWriter.Status {
        switch phase {
        case .unknown: return .unknown
        case .writing, .finishing: return .writing
        case .completed: return .completed
        case .failed: return .failed
        case .cancelled: return .cancelled
        }
    }

    /// Whether the writer's encoder and file are still open (or not opened yet): neither
    /// finished, nor failed, nor cancelled.
    package var isActive: Bool { phase == .unknown || phase == .writing }

    /// Whether appends may be taken now (writing, not finishing).
    package var isWriting: Bool { phase == .writing }

    /// Whether the session has started (explicitly).
    package var hasSession: Bool { session != .notStarted }

    /// The source time that is the file's zero.
    package var start: MediaTime {
        switch session {
        case .notStarted: return .zero
        case .started(let start), .ended(let start, _): return start
        }
    }

    /// The source time the session ends at, if it has ended.
    package var end: MediaTime? {
        if case .ended(_, let end) = session { return end }
        return nil
    }

    /// An input may be added only before writing starts.
    package func addingInput() -> Decision {
        phase == .unknown ? .proceed
            : .fail(ReelError(.alreadyRunning, "an input can be added only before startWriting()",
                              hint: "add every input, then start writing"))
    }

    /// `startWriting()`: proceed to open the file (then ``opened()``); a second call is a misuse.
    package func startingToWrite() -> Decision {
        switch phase {
        case .unknown: return .proceed
        case .writing, .finishing:
            return .fail(ReelError(.alreadyRunning, "startWriting() was called twice", hint: "start writing once"))
        case .completed, .failed, .cancelled: return .ignore
        }
    }

    /// The file and encoders are open: the writer is writing.
    package mutating func opened() {
        if phase == .unknown { phase = .writing }
    }

    /// `startSession(atSourceTime:)`: once, after `startWriting()`, before anything is appended.
    package mutating func startSession(at time: MediaTime) -> Decision {
        switch phase {
        case .unknown:
            return .fail(ReelError(.notRunning, "startSession(atSourceTime:) was called before startWriting()",
                                   hint: "call startWriting(), then startSession(atSourceTime:)"))
        case .finishing, .completed, .failed, .cancelled: return .ignore
        case .writing: break
        }
        guard session == .notStarted, !appendedAnything else {
            return .fail(ReelError(.alreadyRunning, "the writer's session has started already",
                                   hint: "start the session once, before appending anything"))
        }
        session = .started(at: time)
        return .proceed
    }

    /// `endSession(atSourceTime:)`: once, after the session started (or, for a writer made with
    /// a configuration, at any time while writing), at or after its start.
    package mutating func endSession(at time: MediaTime) -> Decision {
        switch phase {
        case .unknown:
            return .fail(ReelError(.notRunning, "endSession(atSourceTime:) was called before startWriting()",
                                   hint: "start writing and the session, append, then end the session"))
        case .finishing, .completed, .failed, .cancelled: return .ignore
        case .writing: break
        }
        switch session {
        case .notStarted where needsSession:
            return .fail(ReelError(.notRunning, "endSession(atSourceTime:) was called before startSession(atSourceTime:)",
                                   hint: "start the session at the first sample's time before ending it"))
        case .ended:
            return .fail(ReelError(.alreadyRunning, "the writer's session has ended already", hint: "end the session once"))
        case .notStarted, .started:
            break
        }
        guard time >= start else {
            return .fail(ReelError(.invalidConfiguration,
                                   "the session cannot end at \(time.seconds) s, before its start at \(start.seconds) s",
                                   hint: "end the session at or after the time it started at"))
        }
        session = .ended(start: start, end: time)
        return .proceed
    }

    /// An append of `media` to an input (`inputFinished`: marked finished): proceed, fail the
    /// writer for a misuse, or ignore once the writer has ended.
    package mutating func appending(_ media: AssetWriterInput.MediaType, inputFinished: Bool = false) -> Decision {
        switch phase {
        case .unknown:
            return .fail(ReelError(.notRunning, "\(media) was appended before startWriting()",
                                   hint: "call startWriting() and startSession(atSourceTime:) before appending"))
        case .finishing, .completed, .failed, .cancelled: return .ignore
        case .writing: break
        }
        if inputFinished {
            return .fail(ReelError(.notRunning, "\(media) was appended after its input was marked finished",
                                   hint: "append everything before markAsFinished()"))
        }
        if needsSession && session == .notStarted {
            return .fail(ReelError(.notRunning, "\(media) was appended before startSession(atSourceTime:)",
                                   hint: "start the session at the first sample's time before appending"))
        }
        appendedAnything = true
        return .proceed
    }

    /// `finishWriting()`: proceed to finish the file (then ``completed()`` or ``fail()``); a
    /// call before `startWriting()` is a misuse; after the end it does nothing.
    package mutating func finishing() -> Decision {
        switch phase {
        case .writing:
            phase = .finishing
            return .proceed
        case .unknown:
            return .fail(ReelError(.notRunning, "finishWriting() was called before startWriting()",
                                   hint: "start writing and append media before finishing"))
        case .finishing, .completed, .failed, .cancelled:
            return .ignore
        }
    }

    /// The file is complete (unless the writer failed while finishing it).
    package mutating func completed() {
        if phase == .finishing { phase = .completed }
    }

    /// Fails the writer. Returns whether its encoder and file were still open (the writer
    /// then finishes what it can); `false` once it had ended, when the status stays as it was
    /// (while finishing, it becomes failed).
    package mutating func fail() -> Bool {
        switch phase {
        case .unknown, .writing:
            phase = .failed
            return true
        case .finishing:
            phase = .failed
            return false
        case .completed, .failed, .cancelled:
            return false
        }
    }

    /// `cancelWriting()`: returns whether the writer was still active (it is cancelled now);
    /// `false` once it had ended, which stays as it was.
    package mutating func cancel() -> Bool {
        guard isActive else { return false }
        phase = .cancelled
        return true
    }
}
