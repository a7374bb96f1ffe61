import Foundation
import ReelCore
import ReelSystem

/// Recovering files that are ended where they are, needing no room on the disk: sound-only
/// files (WAV, FLAC, Ogg: see ``AudioFileRecovery``) and cut-off MKV/WebM (see
/// ``MatroskaInPlaceEnd``).
extension Recovery {
    /// A WAV, FLAC or Ogg file (see ``AudioFileRecovery``), in place or into `destination`, which
    /// must be a file of the same kind. In place with `gate` (the file's), its repair is the
    /// step of the gate that finishes the file.
    static func recoverSound(_ url: URL, kind: AudioFileRecovery.Kind, to destination: Destination?, gate: FinaliseGate? = nil) throws -> Summary {
        if let destination, !kind.containers.contains(destination.container) {
            throw ReelError(.unsupportedFormat, "a recovered \(kind.name) file stays \(kind.name): \(destination.url.lastPathComponent) names another kind",
                            hint: "name the recovered file .\(kind.containers[0].fileExtension), and convert it afterwards if you need another kind")
        }
        let repair = try AudioFileRecovery.plan(url)
        // A whole file needs nothing, and nothing is written (as for a finalised MP4).
        guard repair.isNeeded else { return try summary(of: url, finalisation: .notNeeded) }
        let repairing = { try AudioFileRecovery.recover(url, repair: repair, into: destination?.url, overwrite: destination?.overwrite ?? false) }
        let bytes = try destination == nil ? gate.map { try $0.step(finishing: url, repairing) } ?? repairing() : repairing()
        let target = destination?.url ?? url
        let finalisation: AssetWriter.Finalisation = destination == nil
            ? .inPlace(bytesWritten: bytes)
            : .copied(reason: "written to another file", bytesWritten: bytes)
        return try summary(of: target, finalisation: finalisation)
    }

    /// Ends the cut-off MKV/WebM `url` where it is, needing no room on the disk (see
    /// ``MatroskaInPlaceEnd``): without cues. The caller holds the file's lock; `path` leads
    /// to the file (its writer's descriptor), `gate` orders the end with an abort (see
    /// ``FinaliseGate``).
    static func endMatroskaInPlace(_ url: URL, opening path: URL? = nil, gate: FinaliseGate? = nil) throws -> Summary {
        let ended = try MatroskaInPlaceEnd.end(url, opening: path, gate: gate)
        let count = try PacketCount.count(url)
        var done = Summary(url: url, duration: MediaTime(seconds: max(count.videoEnd, count.audioEnd)), videoFrames: count.videoPackets,
                           finalisation: .inPlace(bytesWritten: ended.bytesWritten))
        done.leftOutBytes = ended.leftOutBytes
        return done
    }

    /// Ends the cut-off MKV/WebM recording `url` where it is without copying it, as a recorder
    /// whose disk filled does with its own file: no room is needed, and no cues are written
    /// (see ``MatroskaInPlaceEnd``). `held`: the lock its writer holds on it, kept while it is
    /// ended (an abort finds the file open), whose gate the end's step goes through as a
    /// finalise's do (an abort waits for it); else the file is locked here.
    ///
    /// - Throws: ``FinaliseGate/GivenUp`` when an abort gave the end up (nothing written).
    package static func endMatroskaWithoutRoom(_ url: URL, held: RecordingLock? = nil) throws -> Summary {
        let lock = try held == nil ? RecordingLock.lockExisting(url, exclusive: true) : nil
        defer { lock?.release() }
        return try endMatroskaInPlace(url, opening: held?.descriptorPath, gate: held?.finaliseGate)
    }
}
