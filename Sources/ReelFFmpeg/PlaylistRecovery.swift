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
        /// Whether the playlist was empty or missing (a full disk, a crash before its first
        /// write) and was made anew from the segments in its folder: then ``added`` names them all.
        public var rebuilt = false
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

    /// Whether the playlist at `url` lacks its end, whether or not a stream writes it right
    /// now: one that does not say it is complete, or the empty or missing playlist of a
    /// stream that has written segments (``close(_:)`` ends each). The empty name a stream
    /// keeps before its first segment is no stream to end (``close(_:)`` says nothing was
    /// recorded), so not one that lacks its end.
    package static func isUnended(_ url: URL) -> Bool {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return !segmentFiles(of: url).isEmpty }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return false }
        if info.st_size == 0 { return !segmentFiles(of: url).isEmpty }
        return (try? HLSPlaylist(url))?.isClosed != true
    }

    /// The HLS media playlist in `folder`: `index.m3u8` (the name a stream into a folder
    /// gives it) if it is one, else the only `.m3u8` media playlist there, else `index.m3u8`
    /// (empty or missing) if its segments are there (``close(_:)`` rebuilds it).
    public static func playlist(inFolder folder: URL) -> URL? {
        let index = folder.appendingPathComponent("index.m3u8")
        if isPlaylist(index) { return index }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let playlists = names.filter { $0.lowercased().hasSuffix(".m3u8") && !$0.hasPrefix(".") }
            .map { folder.appendingPathComponent($0) }.filter(isPlaylist)
        if playlists.count == 1 { return playlists[0] }
        var info = stat()
        // Missing, emptied, or not a playlist any more (``close(_:)`` says which) beside segments.
        let placeholder = stat(index.path, &info) != 0 || (info.st_mode & S_IFMT) == S_IFREG
        return playlists.isEmpty && placeholder && !segmentFiles(of: index).isEmpty ? index : nil
    }

    /// Closes the playlist at `url` where it is (see ``PlaylistRecovery``). The new playlist is
    /// written beside it and takes its name once it is on the disk. A playlist that has its end
    /// needs nothing: the summary says `wasClosed` and nothing is written.
    ///
    /// A playlist that is empty or missing while its segments are beside it (FFmpeg's HLS
    /// writer emptied it on a full disk before Reel published the playlist itself; or it was
    /// lost) is rebuilt from the segments that are whole (the summary says `rebuilt`); a torn
    /// one is left out and left as it is. An empty playlist with no segment beside it is removed
    /// (a stream cut off before its first segment); nothing is removed while segments are there.
    ///
    /// - Throws: `ReelError` with `.busy` (a stream is writing its folder right now),
    ///   `.invalidMedia` (not an HLS media playlist), `.nothingRecorded` (not one of its
    ///   segments is whole), `.permissionDenied`, `.ioFailure`.
    public static func close(_ url: URL) throws -> Summary {
        let folder = url.deletingLastPathComponent()
        var info = stat()
        let missing = stat(url.path, &info) != 0
        if !missing || segmentFiles(of: url).isEmpty { try Recovery.checkReadableFile(url) }
        let lock = try RecordingLock.lockExisting(folder, exclusive: true)
        defer { lock.release() }
        // What a stream killed while it wrote the folder left of its own (the room it kept for
        // the ended playlist, a playlist it was publishing): no stream writes the folder now.
        for leftover in FilePlacement.temporaryFiles(beside: url, purposes: ["ending", "publishing"]) { unlink(leftover.path) }
        if missing || info.st_size == 0, !segmentFiles(of: url).isEmpty {
            // Emptied by a full disk (FFmpeg's writer replaced it with what it could write) or
            // lost, while its segments are there: made anew from them.
            return try rebuild(url)
        }
        if stat(url.path, &info) == 0, info.st_size == 0 {
            // The name a stream takes before its first segment: nothing was recorded into it.
            // It goes (the folder's lock is held: no stream writes it), so that the folder can
            // take a stream again.
            unlink(url.path)
            throw ReelError(.nothingRecorded, "\(url.path) was empty: the stream was cut off before its first segment, so nothing was recorded into it",
                            hint: "the empty playlist was removed, so the folder can take a stream again")
        }
        let parsed: HLSPlaylist
        do {
            parsed = try HLSPlaylist(url)
        } catch where !segmentFiles(of: url).isEmpty {
            // Not a playlist (a torn or overwritten write, or another program's file) while
            // segments are beside it: it is not written over; said, with the way to rebuild.
            throw ReelError(.invalidMedia, "\(url.path) is not an HLS playlist (it does not read as one), though \(segmentFiles(of: url).count) segments are beside it",
                            hint: "nothing was changed; move \(url.lastPathComponent) out of the folder and recover the folder again: the playlist is then rebuilt from the whole segments")
        }
        var playlist = parsed
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
        // Written whole, and the writer was stopped (or its playlist cut short) before it listed
        // them: every segment after the last listed, in order, while there is one (only the
        // next was added, and the whole segments after it were left unlisted without a word).
        var last = listed.last?.name
        while let next = playlist.nextSegmentName(after: last),
              FileManager.default.fileExists(atPath: folder.appendingPathComponent(next).path) {
            last = next
            let file = folder.appendingPathComponent(next)
            if let reason = check(file, in: playlist) {
                summary.leftOut.append(LeftOutSegment(name: next, reason: reason, wasListed: false))
                afterHole = true
            } else if let duration = try? segmentDuration(file, in: playlist) {
                keep(HLSPlaylist.Segment(name: next, duration: duration))
                summary.added.append(next)
            } else {
                summary.leftOut.append(LeftOutSegment(name: next, reason: "unreadable", wasListed: false))
                afterHole = true
            }
        }
        playlist.segments = kept
        guard !playlist.segments.isEmpty else {
            throw ReelError(.nothingRecorded, "\(url.path) lists no segment that is whole: there is nothing to close",
                            hint: "the stream was cut off before its first segment was written")
        }
        summary.segments = playlist.segments.count
        summary.duration = playlist.duration
        try write(playlist, to: url)
        return summary
    }

    // MARK: Rebuilding

    /// The segment files of the playlist `url` in its folder, as a stream names them
    /// (`NAME-00000.ts` or `.m4s`), in the order of their numbers.
    static func segmentFiles(of url: URL) -> [(name: String, number: Int64)] {
        let stem = url.deletingPathExtension().lastPathComponent + "-"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)) ?? []
        return names.compactMap { name -> (String, Int64)? in
            let ext = (name as NSString).pathExtension
            guard name.hasPrefix(stem), ext == "ts" || ext == "m4s" else { return nil }
            let digits = name.dropFirst(stem.count).dropLast(ext.count + 1)
            guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int64(digits) else { return nil }
            return (name, number)
        }.sorted { $0.1 < $1.1 }
    }

    /// Writes the playlist `url` anew from the segments beside it (see ``close(_:)``): every
    /// whole one in the order of their numbers, with the duration it plays; one missing from
    /// the numbers, or cut short, starts a discontinuity; fMP4 segments with their
    /// initialisation segment (`NAME-init.mp4`). Nothing is removed.
    private static func rebuild(_ url: URL) throws -> Summary {
        let files = segmentFiles(of: url)
        let stem = url.deletingPathExtension().lastPathComponent
        let folder = url.deletingLastPathComponent()
        // Fragmented MP4 segments if there are any (with their initialisation segment).
        let fmp4 = files.contains { $0.name.hasSuffix(".m4s") }
        let segments = files.filter { $0.name.hasSuffix(fmp4 ? ".m4s" : ".ts") }
        func header(target: Int) -> String {
            var lines = ["#EXTM3U", "#EXT-X-VERSION:\(fmp4 ? 7 : 6)", "#EXT-X-TARGETDURATION:\(target)",
                         "#EXT-X-MEDIA-SEQUENCE:\(segments.first?.number ?? 0)"]
            // From the first segment on: the whole event, as a stream with no window writes it.
            if segments.first?.number == 0 { lines.append("#EXT-X-PLAYLIST-TYPE:EVENT") }
            lines.append("#EXT-X-INDEPENDENT-SEGMENTS")
            if fmp4 { lines.append("#EXT-X-MAP:URI=\"\(stem)-init.mp4\"") }
            return lines.joined(separator: "\n") + "\n"
        }
        var playlist = try HLSPlaylist(text: header(target: 1), url: url)
        var summary = Summary(url: url, segments: 0, duration: .zero, wasClosed: false, rebuilt: true)
        var kept: [HLSPlaylist.Segment] = []
        var afterHole = false
        var expected: Int64?
        for (name, number) in segments {
            if let expected, number != expected { afterHole = true }
            expected = number + 1
            let file = folder.appendingPathComponent(name)
            if let reason = check(file, in: playlist) {
                summary.leftOut.append(LeftOutSegment(name: name, reason: reason, wasListed: false))
                afterHole = true
                continue
            }
            guard let duration = try? segmentDuration(file, in: playlist), duration > .zero else {
                summary.leftOut.append(LeftOutSegment(name: name, reason: "unreadable", wasListed: false))
                afterHole = true
                continue
            }
            kept.append(HLSPlaylist.Segment(name: name, duration: duration, tags: afterHole && !kept.isEmpty ? ["#EXT-X-DISCONTINUITY"] : []))
            summary.added.append(name)
            afterHole = false
        }
        guard !kept.isEmpty else {
            throw ReelError(.nothingRecorded, "no segment in \(folder.path) is whole\(fmp4 ? " and readable with its initialisation segment" : ""): the stream holds nothing that plays",
                            hint: "its files are left as they are")
        }
        let target = max(1, kept.map { Int($0.duration.seconds.rounded()) }.max() ?? 1)
        playlist = try HLSPlaylist(text: header(target: target), url: url)
        playlist.segments = kept
        summary.segments = kept.count
        summary.duration = playlist.duration
        try write(playlist, to: url)
        return summary
    }

    /// Writes `playlist` with its end beside `url`, and gives it `url`'s name once it is on the disk.
    private static func write(_ playlist: HLSPlaylist, to url: URL) throws {
        let temporary = FilePlacement.temporaryURL(beside: url, purpose: "recovering")
        let tracked = UnfinishedCopies.track(temporary)  // a copy: an interrupted command removes it
        defer { tracked.done() }
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
