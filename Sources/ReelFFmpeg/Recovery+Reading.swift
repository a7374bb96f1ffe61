import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// What a recovery reads before it writes: whether the file may be read at all, and where its
/// video starts.
extension Recovery {
    /// Throws unless `url` is a regular file this process may read; checked before anything
    /// opens it, so that a FIFO or a device is refused rather than waited on.
    static func checkReadableFile(_ url: URL) throws {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            let e = errno
            throw ReelError(Syscall.code(forErrno: e, absent: .ioFailure),
                            "cannot read \(url.path): \(Syscall.describe(e))",
                            hint: e == ENOENT ? "check the file name" : nil, errno: e)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            let kind = (info.st_mode & S_IFMT) == S_IFDIR ? "a folder" : "not a regular file"
            throw ReelError(.invalidMedia, "\(url.path) is \(kind)", hint: "give the recording's file name")
        }
        guard access(url.path, R_OK) == 0 else {
            let e = errno
            throw ReelError(Syscall.code(forErrno: e, absent: .ioFailure), "cannot read \(url.path): \(Syscall.describe(e))",
                            hint: "check the file's permissions", errno: e)
        }
    }

    /// The earliest presentation time among the first video packets of `url` (as `view` shows
    /// it, if given).
    static func firstVideoTime(_ url: URL, view: FileView?) throws -> MediaTime? {
        let input = try InputFile(url: url, view: view)
        let ctx = input.context
        let index = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard index >= 0 else { return nil }
        let tb = ctx.pointee.streams[Int(index)]!.pointee.time_base
        var earliest: Int64?
        var seen = 0
        // Look at the first few video packets: the first frame may come after B-frames in decode order.
        while seen < 16, let packet = input.nextReadable() {
            guard packet.pointee.stream_index == index, packet.pointee.pts != FFmpeg.noPTS else { continue }
            earliest = min(earliest ?? packet.pointee.pts, packet.pointee.pts)
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
