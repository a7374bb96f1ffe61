import Foundation
import ReelCore
import ReelSystem

/// Writes what a ``ReplayCut`` selected into a finished file: packets copied by reference,
/// times moved so that the cut starts at zero, the file written under a temporary name and
/// given its own only when complete (never over a file unless told to).
enum ReplayWriter {
    /// Where a save goes: one name (replaced only if `overwrite`), or the first free of
    /// several (chosen when the file is complete, so a crash never leaves an empty name).
    enum Destination {
        case file(URL, overwrite: Bool)
        case firstFree([URL])

        /// The name the file is meant to have first (for errors and the temporary name).
        var preferred: URL? {
            switch self {
            case .file(let url, _): url
            case .firstFree(let urls): urls.first
            }
        }
    }

    /// Writes the last `duration` of `snapshot` (see ``ReplayCut``; `ended`: the encoders are
    /// finished) into `destination`.
    static func write(_ snapshot: [(stream: EncodedStream, packets: [EncodedPacket])], duration: MediaTime, ended: Bool,
                      to destination: Destination, container: Container?) throws -> ReplaySummary {
        FFmpeg.silenceLibraryLogging()
        guard let url = destination.preferred else { throw ReelError(.invalidConfiguration, "no file name to save the replay under") }
        guard let container = container ?? Container(pathExtension: url.pathExtension) else {
            throw ReelError(.unsupportedFormat, "unknown file type '.\(url.pathExtension)' for \(url.lastPathComponent)",
                            hint: "name the replay file .mp4, .mov or .mkv, or give its container")
        }
        let cut = try ReplayCut(snapshot, duration: duration, ended: ended, trimsByEditList: container.isISOBaseMedia)
        var info = stat()
        if case .file(_, overwrite: false) = destination, lstat(url.path, &info) == 0 {
            throw ReelError(.fileExists, "\(url.path) already exists", hint: "save the replay under another name, or allow overwriting")
        }
        let temporary = FilePlacement.temporaryURL(beside: url, purpose: "replay")
        var created = false
        let placed: URL
        do {
            let muxer = try Muxer(url: temporary, container: container, overwrite: false)
            created = true
            let lock = muxer.takeLock()
            defer { lock?.release() }
            do {
                for stream in cut.streams { try muxer.addStream(stream) }
                try muxer.writeHeader(fastStart: true)
                for packet in cut.packets { try muxer.write(packet.shifted(back: cut.start)) }
                try muxer.finish()
            } catch {
                muxer.abandon()
                throw error
            }
            switch destination {
            case .file(_, let overwrite):
                try FilePlacement.place(temporary, at: url, replacing: overwrite, what: "the saved replay")
                placed = url
            case .firstFree(let candidates):
                placed = try FilePlacement.placeAtFirstFree(temporary, candidates: candidates, what: "the saved replay")
            }
        } catch var error as ReelError {
            // Our temporary file (if another took its name first, that one is not ours).
            if created { unlink(temporary.path) }
            // The hidden name is ours, not the user's: errors speak of the file being saved.
            error.message = error.message.replacingOccurrences(of: temporary.path, with: url.path)
                .replacingOccurrences(of: temporary.lastPathComponent, with: url.lastPathComponent)
            throw error
        } catch {
            if created { unlink(temporary.path) }
            throw error
        }
        let bytes = ((try? FileManager.default.attributesOfItem(atPath: placed.path))?[.size] as? NSNumber)?.int64Value ?? 0
        return ReplaySummary(url: placed, duration: cut.end - cut.start, start: cut.start, videoFrames: cut.videoFrames,
                             audioPackets: cut.audioPackets, bytes: bytes)
    }
}
