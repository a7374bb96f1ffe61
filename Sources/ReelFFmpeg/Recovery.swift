import Foundation
internal import CFFmpeg
import ReelCore

/// Recordings cut off by a crash, a kill or a power loss: how to tell them and how to make
/// them into finalised files.
///
/// While recording, MP4 and MOV files are fragmented: an empty index at the front, then
/// self-contained fragments. A clean stop makes such a file a regular one, so a file that
/// still has fragments was cut off (or is being recorded right now). So was a file whose
/// finalising in place was interrupted (see ``AssetWriter/Finalisation``): it plays, and
/// recovering it completes the finalise.
public enum Recovery {
    /// What a recovery produced.
    public struct Summary: Sendable, Hashable {
        public var url: URL
        public var duration: MediaTime
        public var videoFrames: Int64
        /// How the file was made a regular one: in place (its fragment headers blanked, or an
        /// interrupted finalise completed) or by copying.
        public var finalisation: AssetWriter.Finalisation
    }

    /// Whether `url` is a fragmented MP4/MOV, as a recording cut off before its clean stop is, or
    /// one whose finalising was interrupted.
    public static func isCutOff(_ url: URL) -> Bool {
        // Only regular files: opening a FIFO would wait for a writer, a device would be read.
        var info = stat()
        guard stat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return false }
        return hasFragments(url) || MP4Finaliser.isInterrupted(url)
    }

    private static func hasFragments(_ url: URL) -> Bool {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return false }
        defer { try? handle.close() }
        var offset: UInt64 = 0
        let size = (try? handle.seekToEnd()) ?? 0
        var sawMovie = false
        // Walk the top-level boxes: ftyp, moov, then moof/mdat pairs for a fragmented file.
        for _ in 0..<64 {
            guard offset + 8 <= size else { return false }
            try? handle.seek(toOffset: offset)
            guard let header = try? handle.read(upToCount: 16), header.count >= 8 else { return false }
            var length = UInt64(header[0]) << 24 | UInt64(header[1]) << 16 | UInt64(header[2]) << 8 | UInt64(header[3])
            let type = String(decoding: header[4..<8], as: UTF8.self)
            if length == 1, header.count >= 16 {
                length = header[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
            } else if length == 0 {
                length = size - offset
            }
            switch type {
            case "moov": sawMovie = true
            case "moof": return sawMovie
            case "ftyp", "free", "skip", "wide", "mdat", "uuid", "sidx", "styp": break
            default: return false
            }
            // A box that claims more than the file holds (up to 2^64-1) ends the walk: it would
            // overflow the offset.
            guard length >= 8, length <= size - offset else { return false }
            offset += length
        }
        return false
    }

    /// The recordings in `folder` that were cut off (MP4/MOV files with fragments).
    public static func cutOffRecordings(in folder: URL) -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().compactMap { name in
            let url = folder.appendingPathComponent(name)
            guard ["mp4", "mov", "m4v"].contains(url.pathExtension.lowercased()), !name.hasPrefix(".") else { return nil }
            return isCutOff(url) ? url : nil
        }
    }

    /// Makes the cut-off recording at `url` into a finalised file with everything it held:
    /// at `output`, or in place when `output` is `nil`. In place, a file with space reserved for
    /// its index gets the index written there (no copy of its media data; every step leaves a
    /// file that plays); otherwise the original is replaced only once a finalised copy is
    /// complete. A file whose finalising was interrupted is finished where it stopped.
    public static func recover(_ url: URL, to output: URL? = nil, overwrite: Bool = false) throws -> Summary {
        FFmpeg.quietLogging
        try checkReadableFile(url)
        guard isCutOff(url) else {
            throw ReelError(.invalidConfiguration, "\(url.lastPathComponent) is not a cut-off recording (it has no fragments)",
                            hint: "it is complete already, or not a Reel MP4/MOV recording")
        }
        let container: Container = url.pathExtension.lowercased() == "mov" ? .mov : .mp4
        let finalisation: AssetWriter.Finalisation
        if MP4Finaliser.isInterrupted(url) {
            // Its new index is complete and in force (or about to be): finish the steps.
            var target = url
            if let output {
                try copy(url, to: output, overwrite: overwrite)
                target = output
            }
            finalisation = .inPlace(bytesWritten: try MP4Finaliser.resume(target) ?? 0)
        } else {
            // The writer started every track at one lead time and FFmpeg moved the file so that
            // the first packet decodes at zero; the first video frame's time is that lead.
            let shift = try firstVideoTime(url) ?? .zero
            if let output {
                try Remuxer.remux(url, to: output, container: container, fastStart: true, overwrite: overwrite, shift: shift)
                let bytes = ((try? FileManager.default.attributesOfItem(atPath: output.path))?[.size] as? NSNumber)?.int64Value ?? 0
                finalisation = .copied(reason: "written to another file", bytesWritten: bytes)
            } else {
                finalisation = try AssetWriter.finalise(url, container: container, shift: shift, inPlace: true, copyWhenSmall: true)
            }
        }
        let result = output ?? url
        let probe = try InputFile(url: result)
        var duration = MediaTime.zero
        var frames: Int64 = 0
        for i in 0..<Int(probe.context.pointee.nb_streams) {
            let stream = probe.context.pointee.streams[i]!
            let tb = stream.pointee.time_base
            if stream.pointee.duration > 0 {
                duration = max(duration, MediaTime(ticks: stream.pointee.duration, tb))
            }
            if stream.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO { frames = stream.pointee.nb_frames }
        }
        return Summary(url: result, duration: duration, videoFrames: frames, finalisation: finalisation)
    }

    /// Copies `url` to `output` (which must not exist unless `overwrite`), complete or not at all.
    private static func copy(_ url: URL, to output: URL, overwrite: Bool) throws {
        if !overwrite && FileManager.default.fileExists(atPath: output.path) {
            throw Muxer.fileError(EEXIST, creating: output, action: "create")
        }
        let temporary = output.deletingLastPathComponent()
            .appendingPathComponent(".\(output.deletingPathExtension().lastPathComponent).recovering.\(output.pathExtension)")
        try? FileManager.default.removeItem(at: temporary)
        do {
            try FileManager.default.copyItem(at: url, to: temporary)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw ReelError(.ioFailure, "cannot copy \(url.path) to \(output.path): \(error.localizedDescription)")
        }
        if rename(temporary.path, output.path) != 0 {
            let e = errno
            try? FileManager.default.removeItem(at: temporary)
            throw Muxer.fileError(e, creating: output, action: "create")
        }
    }

    /// Throws unless `url` is a regular file this process may read; checked before anything
    /// opens it, so that a FIFO or a device is refused rather than waited on.
    static func checkReadableFile(_ url: URL) throws {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            let e = errno
            throw ReelError(e == ENOENT ? .ioFailure : .permissionDenied,
                            "cannot read \(url.path): \(String(cString: strerror(e)))",
                            hint: e == ENOENT ? "check the file name" : nil, errno: e)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            let kind = (info.st_mode & S_IFMT) == S_IFDIR ? "a folder" : "not a regular file"
            throw ReelError(.invalidMedia, "\(url.path) is \(kind)", hint: "give the recording's file name")
        }
        guard access(url.path, R_OK) == 0 else {
            let e = errno
            throw ReelError(.permissionDenied, "cannot read \(url.path): \(String(cString: strerror(e)))",
                            hint: "check the file's permissions", errno: e)
        }
    }

    /// The earliest presentation time among the first video packets of `url`.
    private static func firstVideoTime(_ url: URL) throws -> MediaTime? {
        let input = try InputFile(url: url)
        let ctx = input.context
        let index = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard index >= 0 else { return nil }
        let tb = ctx.pointee.streams[Int(index)]!.pointee.time_base
        let packet = av_packet_alloc()
        defer { var p = packet; av_packet_free(&p) }
        var earliest: Int64?
        var seen = 0
        // Look at the first few video packets: the first frame may come after B-frames in decode order.
        while seen < 16, av_read_frame(ctx, packet) >= 0 {
            defer { av_packet_unref(packet) }
            guard packet!.pointee.stream_index == index, packet!.pointee.pts != FFmpeg.noPTS else { continue }
            earliest = min(earliest ?? packet!.pointee.pts, packet!.pointee.pts)
            seen += 1
        }
        guard let earliest else { return nil }
        let time = MediaTime(ticks: earliest, tb)
        // The writer's lead is a fraction of a second; a first frame stamped hours away (or
        // before zero) is damage, and moving every packet by it would put them out of range.
        guard time >= .zero, time <= MediaTime(value: 24 * 3600, timescale: 1) else {
            throw ReelError(.invalidMedia, "\(url.lastPathComponent) is damaged: its first video frame is stamped at \(Int(time.seconds)) s",
                            hint: "it is not a Reel recording, or its index is damaged")
        }
        return time
    }
}
