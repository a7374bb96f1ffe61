import Foundation
import ReelCore
import ReelSystem

/// Finalising a fragmented MP4/MOV into a regular one (at the end of a recording, and for
/// `reel recover`), and what a writer says when it cannot.
extension AssetWriter {
    /// Makes the fragmented MP4/MOV at `url` a regular one with its index at the front: in place
    /// if `inPlace` and the file has space reserved for the index (see `MP4Finaliser`), else
    /// (or if the in-place way finds anything unexpected, having changed nothing) by copying.
    /// `shift` is where the recording starts on the fragmented file's timeline. With
    /// `copyWhenSmall` a recording smaller than the unused reservation is copied instead.
    @discardableResult
    public static func finalise(_ url: URL, container: Container, shift: MediaTime = .zero, inPlace: Bool,
                                copyWhenSmall: Bool = false) throws -> Finalisation {
        try finalise(url, container: container, shift: shift, inPlace: inPlace, copyWhenSmall: copyWhenSmall, fault: nil)
    }

    /// ``finalise(_:container:shift:inPlace:copyWhenSmall:)`` with `fault` injected into the
    /// in-place way (tests).
    /// `chapters` go into the finalised file; finalised in place, its presentation ends at `end`
    /// (from its start), if given.
    /// `lateStarts` (by stream index, when the writer knows them) say how much later than the
    /// earliest each stream's first packet came (see `Movie.readFragments`).
    /// `gate`: the file's (see ``FinaliseGate``), through which each change to it goes (a
    /// finalise given up by an abort throws ``FinaliseGate/GivenUp``).
    static func finalise(_ url: URL, container: Container, shift: MediaTime, lateStarts: [Int: MediaTime]? = nil, inPlace: Bool,
                         copyWhenSmall: Bool, fault: MP4Finaliser.Fault?, chapters: [Chapter] = [], end: MediaTime? = nil,
                         gate: FinaliseGate? = nil) throws -> Finalisation {
        try finalise(url, held: nil, gate: gate, container: container, shift: shift, lateStarts: lateStarts, inPlace: inPlace,
                     copyWhenSmall: copyWhenSmall, fault: fault, chapters: chapters, end: end, beforePlacing: nil).finalisation
    }

    /// ``finalise(_:container:shift:lateStarts:inPlace:copyWhenSmall:fault:chapters:end:)`` of
    /// the file its writer holds as `held` (expected at `url`): read and written through the
    /// writer's descriptor, never by its name, so a file renamed or moved by someone as the
    /// recording stops is finalised all the same, and one whose folder was made read-only
    /// (where no copy can be made beside it) in place. A compact copy takes the name the file
    /// has when the copy is complete (``RecordingLock/replace(with:expected:what:)``). Returns
    /// where the finalised file is.
    ///
    /// Every change to the held file, and the copy taking its place, is a step of its
    /// ``FinaliseGate``: an abort (``FinaliseGate/giveUp()``) stops the finalise between two
    /// steps, as a crash there would, and then throws a `.notRunning` error.
    static func finalise(_ url: URL, held: RecordingLock?, container: Container, shift: MediaTime, lateStarts: [Int: MediaTime]? = nil,
                         inPlace: Bool, copyWhenSmall: Bool, fault: MP4Finaliser.Fault?, chapters: [Chapter] = [],
                         end: MediaTime? = nil, beforePlacing: (() -> Void)? = nil) throws -> (finalisation: Finalisation, url: URL) {
        let gate = held?.finaliseGate
        do {
            return try finalise(url, held: held, gate: gate, container: container, shift: shift, lateStarts: lateStarts, inPlace: inPlace,
                                copyWhenSmall: copyWhenSmall, fault: fault, chapters: chapters, end: end, beforePlacing: beforePlacing)
        } catch is FinaliseGate.GivenUp {
            throw ReelError(.notRunning, "the finalise of \(url.lastPathComponent) was given up by an abort of the recording",
                            hint: "it holds what was recorded and plays; \(LibraryHint.finalise(url.path))")
        }
    }

    private static func finalise(_ url: URL, held: RecordingLock?, gate: FinaliseGate?, container: Container, shift: MediaTime,
                                 lateStarts: [Int: MediaTime]?, inPlace: Bool, copyWhenSmall: Bool, fault: MP4Finaliser.Fault?,
                                 chapters: [Chapter], end: MediaTime?, beforePlacing: (() -> Void)?) throws -> (finalisation: Finalisation, url: URL) {
        let path = held?.descriptorPath
        var reason = "no space was reserved for the index"
        var inPlaceWorks = false
        if inPlace {
            do {
                let outcome = try MP4Finaliser.finalise(url, opening: path, shift: shift, lateStarts: lateStarts, end: end, chapters: chapters,
                                                        copyWhenSmall: copyWhenSmall, fault: fault, gate: gate)
                return (.inPlace(bytesWritten: outcome.bytesWritten), url)
            } catch let fallback as MP4Finaliser.CopyInstead {
                reason = fallback.reason
                inPlaceWorks = fallback.isChoice
            }
        }
        let placed: URL
        do {
            placed = try finalise(url, held: held, gate: gate, container: container, shift: shift, lateStarts: lateStarts, chapters: chapters,
                                  beforePlacing: beforePlacing)
        } catch let error as ReelError where inPlaceWorks && [.permissionDenied, .insufficientStorage, .ioFailure].contains(error.code) {
            // The smaller copy could not be written beside the file (its folder was made
            // read-only, the disk is full): in place after all, keeping the unused reservation.
            let outcome = try MP4Finaliser.finalise(url, opening: path, shift: shift, lateStarts: lateStarts, end: end, chapters: chapters,
                                                    copyWhenSmall: false, fault: fault, gate: gate)
            return (.inPlace(bytesWritten: outcome.bytesWritten), url)
        }
        let bytes = FileIdentity.size(of: placed) ?? 0
        return (.copied(reason: reason, bytesWritten: bytes), placed)
    }

    /// Rewrites a fragmented MP4/MOV at `url` as a regular one with its index at the front, by
    /// copying it. The fragmented file is replaced only once the new one is complete and on the
    /// disk.
    public static func finalise(_ url: URL, container: Container, shift: MediaTime = .zero) throws {
        try finalise(url, container: container, shift: shift, chapters: nil)
    }

    /// ``finalise(_:container:shift:)`` giving the file `chapters` (`nil`: those it holds).
    static func finalise(_ url: URL, container: Container, shift: MediaTime, lateStarts: [Int: MediaTime]? = nil, chapters: [Chapter]?) throws {
        _ = try finalise(url, held: nil, gate: nil, container: container, shift: shift, lateStarts: lateStarts, chapters: chapters, beforePlacing: nil)
    }

    /// ``finalise(_:container:shift:lateStarts:chapters:)`` of the file its writer holds as
    /// `held`, if given: read through the writer's descriptor, the copy made beside where the
    /// file is now and put in its place wherever it is when the copy is complete. Returns
    /// where the copy is. `beforePlacing` runs once the copy is complete (tests).
    private static func finalise(_ url: URL, held: RecordingLock?, gate: FinaliseGate?, container: Container, shift: MediaTime,
                                 lateStarts: [Int: MediaTime]?, chapters: [Chapter]?, beforePlacing: (() -> Void)?) throws -> URL {
        // Beside the file where it is now.
        var beside = url
        if case .moved(let now)? = held?.whereabouts(expected: url) { beside = now }
        // Locked as being written from its creation until it has taken the file's place.
        let temporary = FilePlacement.temporaryURL(beside: beside, purpose: "finalising")
        // A copy until it takes the file's place: an interrupted command removes it.
        let tracked = UnfinishedCopies.track(temporary)
        defer { tracked.done() }
        // On failure the temporary file is a partial copy of ours, the original untouched.
        let copy: Remuxer.Copy
        do {
            copy = try Remuxer.copyPackets(of: held?.descriptorPath ?? url, to: temporary, container: container, fastStart: true,
                                           overwrite: false, shift: shift, lateStarts: lateStarts, chapters: chapters)
        } catch {
            // Our partial copy, unless its name was taken meanwhile (then it is not ours).
            if (error as? ReelError)?.code != .fileExists { unlink(temporary.path) }
            throw error
        }
        defer { copy.lock?.release() }
        beforePlacing?()
        do {
            // On the disk before the step that places it: an abort waits for a step under
            // way, and the copy's sync can take long (gigabytes over a size limit, a slow disk).
            try FilePlacement.sync(temporary)
            // From here it may take the file's place (after a swap its name holds the old file).
            tracked.done()
            guard let held else {
                let place = { try FilePlacement.place(temporary, at: url, replacing: true, what: "the finalised file") }
                if let gate { return try gate.placingStep { try place(); return url } }
                try place()
                return url
            }
            // The step that completes the finalise (see ``FinaliseGate``).
            guard let gate else { return try held.replace(with: temporary, expected: url, what: "the finalised file") }
            return try gate.placingStep { try held.replace(with: temporary, expected: url, what: "the finalised file") }
        } catch {
            // Our copy, unless its name was taken (then it is not ours to remove).
            if (error as? ReelError)?.code != .fileExists { unlink(temporary.path) }
            throw error
        }
    }
}
