import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// HLS as a live stream writes it: FFmpeg's muxer options, and the checks of the folder and
/// of what FFmpeg 5.1's HLS writer does not report itself.
extension LiveStream {
    /// What the HLS muxer is told: segment length, window, segment kind, names beside the playlist.
    var hlsOptions: [String: String] {
        var o: [String: String] = [
            "hls_time": String(format: "%.3f", options.segmentDuration.seconds),
            "hls_list_size": String(options.playlistWindow ?? 0),
            "hls_segment_type": options.segmentFormat == .fmp4 ? "fmp4" : "mpegts",
        ]
        // A pattern (FFmpeg 5.1 cannot escape a '%' in it: such paths are refused at init).
        let stem = url.deletingPathExtension().lastPathComponent
        let folder = url.deletingLastPathComponent().path
        o["hls_segment_filename"] = "\(folder)/\(stem)-%05d.\(options.segmentFormat == .fmp4 ? "m4s" : "ts")"
        if options.segmentFormat == .fmp4 { o["hls_fmp4_init_filename"] = "\(stem)-init.mp4" }
        // A rolling window deletes what left it; a whole event keeps every segment.
        if options.playlistWindow != nil { o["hls_flags"] = "delete_segments+independent_segments" } else {
            o["hls_playlist_type"] = "event"
            o["hls_flags"] = "independent_segments"
        }
        return o
    }

    /// `packet` timed as FFmpeg 5.1's HLS writer needs it to time its segments by the
    /// pictures' times. The writer times the last segment (the others by their keyframes'
    /// times) by adding up the durations of its video packets after the first, plus the
    /// stream's first packet's; and a picture's duration is one frame even when the next comes
    /// a second later (the frame modes that leave repeats out), so the last segment ended up to
    /// a second early. So each video packet after the first says how long since the one
    /// before (the first keeps its frame, the last picture's): the sum is then from the
    /// segment's keyframe to the end of its last picture. A stream whose pictures come out of
    /// order (B-frames) has a picture every frame and goes as it is. (MPEG-TS segments carry no
    /// durations; fragmented MP4 segments would time their pictures by them, so theirs stay:
    /// see ``timesPicturesByDuration``.)
    func hlsTimed(_ packet: EncodedPacket) -> EncodedPacket {
        guard options.segmentFormat == .mpegts, packet.stream.kind == .video,
              packet.stream.parameters.pointer.pointee.video_delay == 0 else { return packet }
        defer { hlsLastVideoPTS = packet.pts }
        guard let last = hlsLastVideoPTS, packet.pts > last else { return packet }
        return packet.lasting(ticks: packet.pts - last)
    }

    /// Whether the stream times its pictures by their durations, one frame each: HLS in
    /// fragmented MP4 segments (FFmpeg's MP4 fragments start at the sum of the durations
    /// before them). It cannot carry a recording whose pictures may be seconds apart (the frame
    /// modes that leave repeats out): they would play at the wrong times.
    package var timesPicturesByDuration: Bool { format == "hls" && options.segmentFormat == .fmp4 }

    /// HLS writes its playlist and numbered segments beside it: none of them may be there
    /// already (a segment of another recording would be written over).
    func checkHLSFolder() throws {
        if FileManager.default.fileExists(atPath: url.path) {
            throw ReelError(.fileExists, "\(url.path) already exists",
                            hint: "give HLS an empty folder of its own (an empty playlist there is what a stream cut off before its first segment leaves; recovering the folder removes it)")
        }
        let folder = url.deletingLastPathComponent()
        if let taken = writtenSegments().first {
            throw ReelError(.fileExists, "\(folder.appendingPathComponent(taken).path) already exists, and HLS would write over it",
                            hint: "give HLS an empty folder of its own")
        }
        // The playlist's name is taken now, empty (FFmpeg writes it first after a segment):
        // a second recording into the folder is refused, and a folder that cannot be written
        // fails the start.
        let fd = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let code = errno
            if code == EEXIST { throw ReelError(.fileExists, "\(url.path) already exists", hint: "give HLS an empty folder of its own") }
            throw ReelError(code == EACCES || code == EROFS || code == EPERM ? .permissionDenied : .ioFailure,
                            "cannot write HLS into \(folder.path): \(String(cString: strerror(code)))",
                            hint: "check the folder's permissions, or choose another", errno: code)
        }
        close(fd)
        // Held while the stream writes the folder: a playlist without its end there is being
        // written, not cut off (see PlaylistRecovery). A folder that cannot be locked (some
        // network file systems) goes without.
        hlsClaim = HLSClaim(folderLock: try? RecordingLock.lockExisting(folder, exclusive: true))
    }

    /// Has `muxer`'s playlists published by an ``HLSPublisher`` (before the header: the HLS
    /// writer's inner contexts take its callbacks then), kept alive as long as the muxer.
    func publishHLS(through muxer: Muxer) {
        let publisher = HLSPublisher(playlist: url)
        publisher.install(on: muxer.context)
        muxer.callbackOwner = publisher
        hlsPublisher = publisher
    }

    /// After the trailer (`trailerError` if it failed): the playlist ends with what was written
    /// whole, whatever the trailer could write; a playlist left unended or a segment gone is the
    /// stream's failure, said.
    func checkHLSEnded(trailerError ended: ReelError?) {
        hlsPublisher?.seal()
        do {
            if let ended { throw explainUnfinishedPlaylist(ended) }
            // FFmpeg's HLS writer does not report a playlist it could not write at the end.
            try checkPlaylistEnded()
            try checkHLSSegments()
        } catch {
            let failure = error as? ReelError ?? ReelError(.ioFailure, "\(error)")
            condition.withLock { statistics_.failure = failure }
            report(.failed(name: name, error: failure))
        }
    }

    /// The stream is over (or could not start): its playlist ended where it stopped, and the
    /// placeholder of one that never held anything removed (see ``releaseEmptyPlaylist()``).
    func endHLS() {
        hlsPublisher?.seal()
        releaseEmptyPlaylist()
    }

    /// Removes the playlist's placeholder if nothing was ever written into it and no segment
    /// beside it holds anything (segments without their playlist are kept, and their stream
    /// has failed saying so), and lets the folder go.
    func releaseEmptyPlaylist() {
        guard let claim = hlsClaim else { return }
        hlsClaim = nil
        var info = stat()
        let folder = url.deletingLastPathComponent()
        let holding = writtenSegments().filter { name in
            var segment = stat()
            return stat(folder.appendingPathComponent(name).path, &segment) == 0 && segment.st_size > 0
        }
        if stat(url.path, &info) == 0 && info.st_size == 0 && holding.isEmpty { unlink(url.path) }
        claim.folderLock?.release()
    }

    /// The names of this stream's segment files in its folder (the numbered names FFmpeg
    /// gives them beside the playlist, and the initialisation segment).
    func writtenSegments() -> [String] {
        let stem = url.deletingPathExtension().lastPathComponent
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)) ?? []
        return names.filter { $0.hasPrefix(stem + "-") && ["ts", "m4s", "mp4"].contains(($0 as NSString).pathExtension) }.sorted()
    }

    /// Throws unless the playlist on disk has its end (`#EXT-X-ENDLIST`, which FFmpeg's HLS
    /// writer writes last at the trailer and reports no failure of).
    func checkPlaylistEnded() throws {
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        guard !text.hasSuffix("#EXT-X-ENDLIST\n") else { return }
        throw explainUnfinishedPlaylist(ReelError(.ioFailure, text.isEmpty ? "the playlist is empty" : "the playlist has no end"))
    }

    /// What a stream whose end could not be written says: its playlist, if one was written,
    /// lists the segments written whole and has its end there (see ``HLSPublisher/seal()``),
    /// or lacks its end and its last segment.
    func explainUnfinishedPlaylist(_ error: ReelError) -> ReelError {
        let segments = writtenSegments()
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        let ended = text.hasSuffix("#EXT-X-ENDLIST\n")
        let what = ended ? "its playlist \(url.path) ends with the last segment written whole"
                 : !text.isEmpty ? "its playlist \(url.path) lacks its end and its last segment"
                 : segments.isEmpty ? "nothing of it was written" : "its playlist \(url.path) was never written (\(segments.count) segment(s) beside it are not listed)"
        return ReelError(error.code == .insufficientStorage ? .insufficientStorage : .ioFailure,
                         "the end of HLS stream \(url.path) could not be written: \(what) (\(error.message))",
                         hint: !text.isEmpty && !ended ? LibraryHint.closeThePlaylist(url.path) : "check the free space and permissions of \(url.deletingLastPathComponent().path)",
                         averror: error.averror)
    }

    /// FFmpeg 5.1's HLS writer only logs a segment it cannot open (a full disk, a folder
    /// gone) and lists it all the same: every segment the playlist lists must be there, or the
    /// stream has failed.
    /// Nor does it report a full disk: the segments are cut short without a word. So the
    /// stream fails while the disk still has room for two more segments at the rate sent.
    func checkHLSSegments() throws {
        let folder = url.deletingLastPathComponent()
        if let free = FreeSpace.of(folder)?.available {
            let rate = condition.withLock { statistics_.bitrate } / 8
            let needed = max(1 << 20, Int64(Double(rate) * options.segmentDuration.seconds * 2))
            if free < needed {
                throw ReelError(.insufficientStorage,
                                "the disk of \(folder.path) is nearly full (\(free / 1000) kB free; HLS stops below \(needed / 1000) kB, room for two more segments and at least 1 MiB)",
                                hint: "free some space there")
            }
        }
        // A segment cut short or not written at all: never listed (see HLSPublisher), so the
        // stream stops here.
        if let (name, averror) = hlsPublisher?.failedSegment {
            let full = averror == reel_averror(ENOSPC) || averror == reel_averror(EDQUOT)
            throw ReelError(full ? .insufficientStorage : .ioFailure,
                            "HLS segment \(folder.appendingPathComponent(name).path) could not be written (\(FFmpeg.describe(averror)))",
                            hint: "check the free space in \(folder.path)", averror: averror)
        }
        guard let playlist = try? String(contentsOf: url, encoding: .utf8) else { return }  // not written yet
        for line in playlist.split(separator: "\n") where !line.hasPrefix("#") && !line.isEmpty {
            let name = String(line)
            let segment = folder.appendingPathComponent(name).path
            var info = stat()
            if stat(segment, &info) != 0 || info.st_size == 0 {
                if hlsSegmentsSeen.contains(name) {
                    throw ReelError(.ioFailure, "HLS segment \(segment) was deleted or moved away after it was written: the playlist lists it, so players would stop there",
                                    hint: "leave the HLS folder's files alone while it is written; the recording's file is not affected")
                }
                throw ReelError(.ioFailure, "HLS segment \(segment) could not be written", hint: "check the free space in \(folder.path)")
            }
            hlsSegmentsSeen.insert(name)
        }
    }
}

/// What an HLS stream holds while it writes its folder: the playlist's name (taken as an empty
/// file until FFmpeg writes it) and a lock on the folder.
struct HLSClaim {
    var folderLock: RecordingLock?
}
