import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// What FFmpeg 5.1's HLS writer writes, watched through its format context's `io_open` and
/// `io_close2`, so that a full disk never destroys the playlist.
///
/// The writer writes each new playlist into `NAME.m3u8.tmp` and renames that over the playlist,
/// whether or not the writes went through: on a full disk an empty or short copy replaced the
/// last good playlist (players lost the stream, and the archive seemed empty). Nor does it
/// check its segments: a segment cut short by the disk was listed all the same. So:
///
/// - each segment (and the fMP4 initialisation segment) is known whole only once every write
///   into it went through and it was closed without error;
/// - each playlist is written into memory, and published only when it lists none but whole
///   segments: written beside the playlist, synced, and renamed to the name the writer renames
///   over the playlist; otherwise that name is not there, the writer's rename fails (quietly:
///   its log is silenced), and the last good playlist stays;
/// - at the end (``seal()``) the newest playlist the writer made is published with its
///   segments that are whole and its end (`#EXT-X-ENDLIST`), into room kept on the disk from
///   the start, so that even a full disk takes it.
final class HLSPublisher: @unchecked Sendable {
    typealias IOOpen = @convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafeMutablePointer<UnsafeMutablePointer<AVIOContext>?>?,
                                       UnsafePointer<CChar>?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    typealias IOClose = @convention(c) (UnsafeMutablePointer<AVFormatContext>?, UnsafeMutablePointer<AVIOContext>?) -> Int32

    /// The playlist.
    let playlist: URL
    private let lock = NSLock()
    // Guarded by `lock`:
    private var defaultOpen: IOOpen?
    private var defaultClose: IOClose?
    /// The playlist outputs (in memory) that are open, each with the name it was opened as.
    private var playlistOutputs: [UnsafeMutableRawPointer: String] = [:]
    /// The segment outputs that are open, each with its file's name.
    private var segmentOutputs: [UnsafeMutableRawPointer: String] = [:]
    /// The segments closed whole.
    private var whole: Set<String> = []
    /// Segments that could not be written whole, each with the FFmpeg error.
    private var torn: [String: Int32] = [:]
    /// The newest playlist the writer made, and what the playlist on the disk holds (as Reel
    /// published it).
    private var newest: String?
    private(set) var published: String?
    /// The room kept for the ended playlist: a hidden file beside the playlist with blocks
    /// kept beyond its (zero) size, and how many.
    private var reserve: (url: URL, fd: Int32)?
    private var reserveRoom: Int64 = 0

    init(playlist: URL) {
        self.playlist = playlist
    }

    deinit {
        if let reserve {
            Syscall.close(reserve.fd)
            unlink(reserve.url.path)
        }
    }

    /// Watches the writer of `context` (before its header is written: the HLS writer gives its
    /// inner contexts the same callbacks then). The caller keeps the publisher alive while the
    /// context lives.
    func install(on context: UnsafeMutablePointer<AVFormatContext>) {
        lock.withLock {
            defaultOpen = context.pointee.io_open
            defaultClose = context.pointee.io_close2
            keepRoom(64 << 10)
        }
        context.pointee.opaque = Unmanaged.passUnretained(self).toOpaque()
        context.pointee.io_open = Self.openCallback
        context.pointee.io_close2 = Self.closeCallback
    }

    /// The first segment that could not be written whole, with why, if any.
    var failedSegment: (name: String, averror: Int32)? {
        lock.withLock { torn.min { $0.key < $1.key }.map { (name: $0.key, averror: $0.value) } }
    }

    private static let openCallback: IOOpen = { context, pb, url, flags, options in
        guard let context, let pb, let url, let opaque = context.pointee.opaque else { return reel_averror(EINVAL) }
        return Unmanaged<HLSPublisher>.fromOpaque(opaque).takeUnretainedValue().openOutput(context, pb, String(cString: url), flags, options)
    }

    private static let closeCallback: IOClose = { context, pb in
        guard let context, let opaque = context.pointee.opaque else { return reel_averror(EINVAL) }
        return Unmanaged<HLSPublisher>.fromOpaque(opaque).takeUnretainedValue().closeOutput(context, pb)
    }

    private func openOutput(_ context: UnsafeMutablePointer<AVFormatContext>, _ pb: UnsafeMutablePointer<UnsafeMutablePointer<AVIOContext>?>,
                      _ url: String, _ flags: Int32, _ options: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
        let path = url.hasPrefix("file:") ? String(url.dropFirst(5)) : url
        if flags & AVIO_FLAG_WRITE != 0 && (path == playlist.path || path == playlist.path + ".tmp") {
            // Into memory; a stale copy of the name the writer renames from goes first (it
            // would be renamed over the playlist if this one is not published).
            if path != playlist.path { unlink(path) }
            let opened = avio_open_dyn_buf(pb)
            if opened >= 0, let output = pb.pointee { lock.withLock { playlistOutputs[UnsafeMutableRawPointer(output)] = path } }
            return opened
        }
        guard let opening = lock.withLock({ defaultOpen }) else { return reel_averror(ENOSYS) }
        let opened = opening(context, pb, url, flags, options)
        if flags & AVIO_FLAG_WRITE != 0 {
            let name = (path as NSString).lastPathComponent
            lock.withLock {
                if opened >= 0, let output = pb.pointee {
                    segmentOutputs[UnsafeMutableRawPointer(output)] = name
                    whole.remove(name)
                } else {
                    torn[name] = opened
                }
            }
        }
        return opened
    }

    private func closeOutput(_ context: UnsafeMutablePointer<AVFormatContext>, _ pb: UnsafeMutablePointer<AVIOContext>?) -> Int32 {
        guard let pb else { return 0 }
        let key = UnsafeMutableRawPointer(pb)
        let (target, segment, closing) = lock.withLock { () -> (String?, String?, IOClose?) in
            (playlistOutputs.removeValue(forKey: key), segmentOutputs.removeValue(forKey: key), defaultClose)
        }
        if let target {
            var buffer: UnsafeMutablePointer<UInt8>? = nil
            let size = avio_close_dyn_buf(pb, &buffer)
            defer { av_free(buffer) }
            let text = buffer.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(max(size, 0))), as: UTF8.self) } ?? ""
            lock.withLock { offer(text, as: target) }
            return 0
        }
        guard let closing else { return reel_averror(ENOSYS) }
        guard let segment else { return closing(context, pb) }
        avio_flush(pb)
        let failed = pb.pointee.error
        let closed = closing(context, pb)
        lock.withLock {
            if failed == 0 && closed >= 0 {
                whole.insert(segment)
                torn.removeValue(forKey: segment)
            } else {
                torn[segment] = failed != 0 ? failed : closed
            }
        }
        return failed != 0 ? failed : closed
    }

    // MARK: Publishing (under `lock`)

    /// The playlist `text` as the writer made it, meant for `target`: published if every
    /// segment it lists is whole (see ``HLSPublisher``).
    private func offer(_ text: String, as target: String) {
        newest = text
        guard let parsed = try? HLSPlaylist(text: text, url: playlist), !parsed.segments.isEmpty,
              parsed.segments.allSatisfy({ whole.contains($0.name) }),
              parsed.initialisationSegment.map(whole.contains) ?? true else { return }
        if write(text, to: URL(fileURLWithPath: target)) {
            published = text
            // The ended playlist takes about as much: room for twice as much.
            if Int64(text.utf8.count) * 2 > reserveRoom { keepRoom(Int64(text.utf8.count) * 4) }
        }
    }

    /// Writes `text` beside the playlist, syncs it and renames it to `target`; false if any of
    /// it failed (the copy is removed, `target` not touched).
    private func write(_ text: String, to target: URL) -> Bool {
        let temporary = FilePlacement.temporaryURL(beside: playlist, purpose: "publishing")
        guard case .success(let fd) = Syscall.attempt({ open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }) else {
            return false
        }
        let written = (try? Array(text.utf8).withUnsafeBytes {
            try Syscall.writeAll(fd, $0, orThrow: { ReelError(.ioFailure, "", errno: $0) })
        }) != nil && fsync(fd) == 0
        Syscall.close(fd)
        guard written, rename(temporary.path, target.path) == 0 else {
            unlink(temporary.path)
            return false
        }
        return true
    }

    /// Keeps `bytes` of room on the disk for the ended playlist (best effort: a disk that has
    /// not that much keeps what it had).
    private func keepRoom(_ bytes: Int64) {
        if reserve == nil {
            let url = FilePlacement.temporaryURL(beside: playlist, purpose: "ending")
            guard case .success(let fd) = Syscall.attempt({ open(url.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }) else { return }
            reserve = (url, fd)
        }
        guard let reserve, bytes > reserveRoom, case .success = Syscall.keepRoom(reserve.fd, range: 0..<bytes) else { return }
        reserveRoom = bytes
    }

    /// Publishes the newest playlist the writer made, with its segments that are whole and its
    /// end, unless the playlist on the disk is that already; a segment left out before whole
    /// ones marks a discontinuity. Into the room kept for it (else a new file). Returns whether
    /// the playlist on the disk has its end now. Called once the writer is done.
    @discardableResult
    func seal() -> Bool {
        lock.withLock {
            defer {
                if let reserve {
                    Syscall.close(reserve.fd)
                    unlink(reserve.url.path)
                }
                reserve = nil
                removeEmptyTornSegments()
            }
            unlink(playlist.path + ".tmp")
            guard let newest, var parsed = try? HLSPlaylist(text: newest, url: playlist) else { return false }
            if published == newest && parsed.isClosed { return true }
            let folder = playlist.deletingLastPathComponent()
            func isWhole(_ name: String) -> Bool {
                var info = stat()
                return whole.contains(name) && stat(folder.appendingPathComponent(name).path, &info) == 0 && info.st_size > 0
            }
            guard parsed.initialisationSegment.map(isWhole) ?? true else { return false }
            var kept: [HLSPlaylist.Segment] = []
            var afterHole = false
            for var segment in parsed.segments {
                guard isWhole(segment.name) else {
                    afterHole = true
                    continue
                }
                if afterHole && !kept.isEmpty && !segment.tags.contains(where: { $0.hasPrefix("#EXT-X-DISCONTINUITY") }) {
                    segment.tags.insert("#EXT-X-DISCONTINUITY", at: 0)
                }
                afterHole = false
                kept.append(segment)
            }
            guard !kept.isEmpty else { return false }
            parsed.segments = kept
            let text = parsed.closedText
            if published == text { return true }
            if let reserve {
                let bytes = Array(text.utf8)
                let placed = (try? bytes.withUnsafeBytes { try Syscall.writeAll(reserve.fd, $0, at: 0, orThrow: { ReelError(.ioFailure, "", errno: $0) }) }) != nil
                    && fsync(reserve.fd) == 0 && rename(reserve.url.path, playlist.path) == 0
                if placed {
                    Syscall.close(reserve.fd)
                    self.reserve = nil
                    published = text
                    return true
                }
            }
            guard write(text, to: playlist) else { return false }
            published = text
            return true
        }
    }

    /// Removes the segment files the writer began and could not write anything into (a full
    /// disk: 0 bytes), unless the playlist on the disk names them: they hold nothing recorded,
    /// and left in the folder they look like a segment lost. One that holds bytes stays (what
    /// it holds was recorded, though no playlist lists it). Under `lock`.
    private func removeEmptyTornSegments() {
        let folder = playlist.deletingLastPathComponent()
        let listed = Set((published ?? "").split(separator: "\n").map(String.init))
        for name in torn.keys where !listed.contains(name) {
            let path = folder.appendingPathComponent(name).path
            var info = stat()
            if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size == 0 { unlink(path) }
        }
    }
}
