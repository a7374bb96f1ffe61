import Foundation
import ReelCore
import ReelSystem

/// Writes what a ``ReplayCut`` selected into a finished file: packets copied by reference,
/// times moved so that the cut starts at zero, the file written under a temporary name and
/// given its own only when complete (never over a file unless told to).
enum ReplayWriter {
    /// Writes the last `duration` of `snapshot` (see ``ReplayCut``; `ended`: the encoders are
    /// finished) into `url`.
    static func write(_ snapshot: [(stream: EncodedStream, packets: [EncodedPacket])], duration: MediaTime, ended: Bool,
                      to url: URL, container: Container?, overwrite: Bool) throws -> ReplaySummary {
        FFmpeg.silenceLibraryLogging()
        guard let container = container ?? Container(pathExtension: url.pathExtension) else {
            throw ReelError(.unsupportedFormat, "unknown file type '.\(url.pathExtension)' for \(url.lastPathComponent)",
                            hint: "name the replay file .mp4, .mov or .mkv, or give its container")
        }
        let cut = try ReplayCut(snapshot, duration: duration, ended: ended, trimsByEditList: container != .mkv)
        var info = stat()
        if !overwrite && lstat(url.path, &info) == 0 {
            throw ReelError(.fileExists, "\(url.path) already exists", hint: "save the replay under another name, or allow overwriting")
        }
        let temporary = FilePlacement.temporaryURL(beside: url, purpose: "replay")
        var created = false
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
            try FilePlacement.place(temporary, at: url, replacing: overwrite, what: "the saved replay")
        } catch {
            // Our temporary file (if another took its name first, that one is not ours).
            if created { unlink(temporary.path) }
            throw error
        }
        let bytes = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
        return ReplaySummary(url: url, duration: cut.end - cut.start, start: cut.start, videoFrames: cut.videoFrames,
                             audioPackets: cut.audioPackets, bytes: bytes)
    }
}
