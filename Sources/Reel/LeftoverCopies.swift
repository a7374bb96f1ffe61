import Foundation
import ReelFFmpeg
import ReelSystem

/// The unfinished copies that interrupted commands left under hidden names
/// (`.NAME.PURPOSE-PID-N.EXT`, see ``FilePlacement/temporaryURL(beside:purpose:pathExtension:)``):
/// found beside a recording, and removed once what they copied is complete and their maker is
/// gone. `reel recover` and `reel merge` say what this finds and removes.
package enum LeftoverCopies {
    /// The unfinished copies that an interrupted finalise, recovery or GIF making (or, with
    /// `purposes` ["merging"], merge) left beside `url`, and beside `recording` too when that is
    /// another file (hidden files named after it, that nothing writes now), each with the file
    /// it was a copy of.
    package static func beside(_ url: URL, or recording: URL? = nil,
                               purposes: [String] = ["finalising", "recovering", "converting"]) -> [(copy: URL, of: URL)] {
        var places = [url.resolvingSymlinksInPath()]
        if let other = recording?.resolvingSymlinksInPath(), other != places[0] { places.append(other) }
        return places.flatMap { place in
            FilePlacement.temporaryFiles(beside: place, purposes: purposes, nested: true).filter { !Recovery.isBeingRecorded($0) }.map { ($0, place) }
        }
    }

    /// Removes those of `leftovers` (see ``beside(_:or:purposes:)``, copies made for one
    /// of `purposes`) whose maker is gone: the process named in the copy's name runs no more.
    /// Each is an unfinished copy of what this run has just found complete or made complete
    /// (the recording, its recovery or its merge), so nothing recorded goes with it (s46 #4:
    /// they were only pointed out, 62 MB left beside a recovery). Those whose maker may still
    /// run (its number taken again, or not in the name) are kept: returned to be pointed out.
    /// Never a file given to the command (`inputs`), nor a finished recording: in a window of
    /// a swap by rename, or a recording deleted while it was finalised, such a copy can be the
    /// only one (those are pointed out).
    package static func tidy(_ leftovers: [(copy: URL, of: URL)], purposes: [String] = ["finalising", "recovering", "converting"],
                             inputs: [URL] = []) -> (removed: [(copy: URL, of: URL)], kept: [(copy: URL, of: URL)]) {
        var removed: [(copy: URL, of: URL)] = [], kept: [(copy: URL, of: URL)] = []
        let given = Set(inputs.compactMap { FileIdentity($0) })
        for leftover in leftovers {
            if FilePlacement.makerIsGone(of: leftover.copy, beside: leftover.of, purposes: purposes),
               FileIdentity(leftover.copy).map({ !given.contains($0) }) ?? false, !Recovery.isFinished(leftover.copy),
               unlink(leftover.copy.path) == 0 {
                removed.append(leftover)
            } else {
                kept.append(leftover)
            }
        }
        return (removed, kept)
    }
}
