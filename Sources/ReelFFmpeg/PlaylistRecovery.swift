import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// HLS playlists that a crash or a kill left open.
///
/// An HLS stream into a folder (``LiveStream``) lists each segment in its playlist once the
/// segment is written whole, and marks the end (`#EXT-X-ENDLIST`) at a clean stop. A playlist
/// cut off before that has no end: players take it for a live stream and wait for more
/// segments that never come (`ffmpeg -i index.m3u8` waits for ever). Closing it keeps every
/// listed segment that is whole, lists a newer whole segment the writer had not listed yet,
/// leaves out a segment that is missing or cut short (its file is left where it is), and marks
/// the end. A stream that is writing its folder right now holds a lock on the folder and is
/// left alone.
public enum PlaylistRecovery {
    /// What closing a playlist did.
    public struct Summary: Sendable, Hashable {
        /// The playlist.
        public var url: URL
        /// The segments it lists now.
        public var segments: Int
        /// Their duration, as the playlist gives it.
        public var duration: MediaTime
        /// Whether it had its end already (then nothing was written).
        public var wasClosed: Bool
        /// Segments that were on the disk, whole, but not listed yet, and are listed now.
        public var added: [String] = []
        /// Segments left out, each with why (missing, empty, cut short); their files, if any,
        /// are left where they are.
        public var leftOut: [LeftOutSegment] = []

        /// Whether the playlist holds every segment it listed: a listed segment was whole when
        /// listed, so one left out (deleted, damaged since) is recorded time lost. The segment
        /// being written when the stream was cut off does not count.
        public var isComplete: Bool { !leftOut.contains(where: \.wasListed) }
    }

    /// A segment that closing a playlist left out.
    public struct LeftOutSegment: Sendable, Hashable {
        /// Its name, as the playlist gives it or as it is in the folder.
        public var name: String
        /// Why: "missing", "empty", "cut short".
        public var reason: String
        /// Whether the playlist listed it (else it was the segment being written when the
        /// stream was cut off).
        public var wasListed = true
    }

    /// Whether `url` is an HLS media playlist (an `.m3u8` file whose first line is `#EXTM3U` and
    /// that lists segments with `#EXTINF`).
    public static func isPlaylist(_ url: URL) -> Bool {
        (try? HLSPlaylist(url)) != nil
    }

    /// Whether `url` is an HLS media playlist without its end that no stream is writing right
    /// now: cut off by a crash or a kill.
    public static func isOpen(_ url: URL) -> Bool {
        guard let playlist = try? HLSPlaylist(url), !playlist.isClosed,
              let lock = try? RecordingLock.lockExisting(url.deletingLastPathComponent(), exclusive: false) else { return false }
        lock.release()
        return true
    }

    /// The HLS media playlist in `folder`: `index.m3u8` (the name a stream into a folder
    /// gives it) if it is one, else the only `.m3u8` media playlist there.
    public static func playlist(inFolder folder: URL) -> URL? {
        let index = folder.appendingPathComponent("index.m3u8")
        if isPlaylist(index) { return index }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let playlists = names.filter { $0.lowercased().hasSuffix(".m3u8") && !$0.hasPrefix(".") }
            .map { folder.appendingPathComponent($0) }.filter(isPlaylist)
        return playlists.count == 1 ? playlists[0] : nil
    }

    /// Closes the playlist at `url` where it is (see ``PlaylistRecovery``). The new playlist is
    /// written beside it and takes its name once it is on the disk. A playlist that has its end
    /// needs nothing: the summary says `wasClosed` and nothing is written.
    ///
    /// - Throws: `ReelError` with `.busy` (a stream is writing its folder right now),
    ///   `.invalidMedia` (not an HLS media playlist), `.nothingRecorded` (not one of its
    ///   segments is whole), `.permissionDenied`, `.ioFailure`.
    public static func close(_ url: URL) throws -> Summary {
        try Recovery.checkReadableFile(url)
        let folder = url.deletingLastPathComponent()
        let lock = try RecordingLock.lockExisting(folder, exclusive: true)
        defer { lock.release() }
        var info = stat()
        if stat(url.path, &info) == 0, info.st_size == 0 {
            // The name a stream takes before its first segment: nothing was recorded into it.
            // It goes (the folder's lock is held: no stream writes it), so that the folder can
            // take a stream again.
            unlink(url.path)
            throw ReelError(.nothingRecorded, "\(url.path) was empty: the stream was cut off before its first segment, so nothing was recorded into it",
                            hint: "the empty playlist was removed, so the folder can take a stream again")
        }
        var playlist = try HLSPlaylist(url)
        if playlist.isClosed {
            return Summary(url: url, segments: playlist.segments.count, duration: playlist.duration, wasClosed: true)
        }
        var summary = Summary(url: url, segments: 0, duration: .zero, wasClosed: false)
        // Every whole segment stays; one that is not is left out, and the segment after such a
        // hole starts a discontinuity (its times jump), which players play through.
        let listed = playlist.segments
        var kept: [HLSPlaylist.Segment] = []
        var afterHole = false
        func keep(_ segment: HLSPlaylist.Segment) {
            var segment = segment
            if afterHole && !kept.isEmpty && !segment.tags.contains(where: { $0.hasPrefix("#EXT-X-DISCONTINUITY") }) {
                segment.tags.insert("#EXT-X-DISCONTINUITY", at: 0)
            }
            afterHole = false
            kept.append(segment)
        }
        for segment in listed {
            if let reason = check(folder.appendingPathComponent(segment.name), in: playlist) {
                summary.leftOut.append(LeftOutSegment(name: segment.name, reason: reason))
                afterHole = true
            } else {
                keep(segment)
            }
        }
        if let next = playlist.nextSegmentName(after: listed.last?.name),
           FileManager.default.fileExists(atPath: folder.appendingPathComponent(next).path) {
            // Written whole, and the writer was stopped before it listed it.
            let file = folder.appendingPathComponent(next)
            if let reason = check(file, in: playlist) {
                summary.leftOut.append(LeftOutSegment(name: next, reason: reason, wasListed: false))
            } else if let duration = try? segmentDuration(file, in: playlist) {
                keep(HLSPlaylist.Segment(name: next, duration: duration))
                summary.added.append(next)
            } else {
                summary.leftOut.append(LeftOutSegment(name: next, reason: "unreadable", wasListed: false))
            }
        }
        playlist.segments = kept
        guard !playlist.segments.isEmpty else {
            throw ReelError(.nothingRecorded, "\(url.path) lists no segment that is whole: there is nothing to close",
                            hint: "the stream was cut off before its first segment was written")
        }
        summary.segments = playlist.segments.count
        summary.duration = playlist.duration
        let temporary = FilePlacement.temporaryURL(beside: url, purpose: "recovering")
        do {
            try Data(playlist.closedText.utf8).write(to: temporary)
            try FilePlacement.sync(temporary)
            try FilePlacement.place(temporary, at: url, replacing: true, what: "the closed playlist")
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            if let error = error as? ReelError { throw error }
            throw ReelError(.ioFailure, "cannot write \(url.path): \(error.localizedDescription)",
                            hint: "check the folder's permissions and free space")
        }
        return summary
    }

    // MARK: Segments

    /// Why the segment at `file` cannot be listed ("missing", "empty", "cut short"), or `nil`
    /// if it is whole: an MPEG-TS segment of whole 188-byte packets, each starting with its
    /// sync byte; an fMP4 segment of whole boxes of the kinds a segment holds.
    private static func check(_ file: URL, in playlist: HLSPlaylist) -> String? {
        var info = stat()
        guard stat(file.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return "missing" }
        guard info.st_size > 0 else { return "empty" }
        guard let mp4 = try? MP4File(url: file, writable: false) else { return "unreadable" }
        defer { mp4.close() }
        if playlist.isFragmentedMP4 {
            let (boxes, truncated) = mp4.readableBoxes(in: 0..<Int64(info.st_size))
            let kinds: Set<BoxType> = ["styp", "sidx", "moof", "mdat", "free", "skip", "prft", "emsg"]
            guard !truncated, boxes.contains(where: { $0.type == .moof }), boxes.allSatisfy({ kinds.contains($0.type) }) else {
                return "cut short"
            }
            return nil
        }
        guard info.st_size % 188 == 0 else { return "cut short" }
        var offset: Int64 = 0
        while offset < Int64(info.st_size) {
            let chunk = (try? mp4.read(at: offset, count: 188 * 1024)) ?? []
            guard !chunk.isEmpty else { return "unreadable" }
            for i in stride(from: 0, to: chunk.count, by: 188) where chunk[i] != 0x47 { return "cut short" }
            offset += Int64(chunk.count)
        }
        return nil
    }

    /// How long the whole segment at `file` plays: from its first video (else any) packet's
    /// time to the end of its last.
    private static func segmentDuration(_ file: URL, in playlist: HLSPlaylist) throws -> MediaTime {
        if playlist.isFragmentedMP4, let initName = playlist.initialisationSegment {
            return try fragmentDuration(file, initialisation: file.deletingLastPathComponent().appendingPathComponent(initName))
        }
        let input = try InputFile(url: file)
        let ctx = input.context
        let video = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        var first: MediaTime?, end: MediaTime?
        while let packet = input.nextReadable() {
            let index = packet.pointee.stream_index
            guard video < 0 || index == video, packet.pointee.pts != FFmpeg.noPTS else { continue }
            let tb = ctx.pointee.streams[Int(index)]!.pointee.time_base
            let start = MediaTime(ticks: packet.pointee.pts, tb)
            first = min(first ?? start, start)
            end = max(end ?? start, MediaTime(ticks: packet.pointee.pts + max(packet.pointee.duration, 0), tb))
        }
        guard let first, let end, end > first else { throw ReelError(.invalidMedia, "\(file.path) holds no timed packet") }
        return end - first
    }

    /// How long an fMP4 segment plays: the durations its fragment headers give its first
    /// track, in the timescale its initialisation segment gives that track.
    private static func fragmentDuration(_ file: URL, initialisation: URL) throws -> MediaTime {
        let header = try MP4File(url: initialisation, writable: false)
        defer { header.close() }
        guard let moov = try header.topLevelBoxes().boxes.first(.moov), moov.size <= 16 << 20 else {
            throw ReelError(.invalidMedia, "\(initialisation.path) has no index")
        }
        let movie = try Movie(moov: try header.read(at: moov.offset, count: Int(moov.size)))
        let segment = try MP4File(url: file, writable: false)
        defer { segment.close() }
        let track = movie.tracks.first { $0.handler == "vide" } ?? movie.tracks[0]
        var ticks: Int64 = 0
        for moof in try segment.topLevelBoxes().boxes where moof.type == .moof && moof.size <= 64 << 20 {
            let bytes = try segment.read(at: moof.offset, count: Int(moof.size))
            for fragment in try TrackFragment.all(inMoof: bytes, at: moof.offset, headerSize: moof.headerSize,
                                                  defaults: movie.defaults(ofTrack:)) where fragment.trackID == track.id {
                ticks += fragment.runs.reduce(0) { $0 + $1.samples.reduce(0) { $0 + Int64($1.duration) } }
            }
        }
        return MediaTime(value: ticks, timescale: Int32(clamping: track.timescale))
    }
}
