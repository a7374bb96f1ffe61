import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// One clip to merge.
public struct MergeInput: Sendable, Hashable {
    /// The clip's file. It is only read, never changed.
    public var url: URL
    /// Whether the clip's audio is replaced by silence. The clip keeps its place and length on
    /// the timeline; only what is heard changes.
    public var isMuted: Bool

    /// A clip at `url`, muted or not.
    public init(url: URL, isMuted: Bool = false) {
        self.url = url
        self.isMuted = isMuted
    }
}

/// How ``Merger`` joins clips.
public struct MergeOptions: Sendable, Hashable {
    /// Whether clips that cannot be joined by copying (another size, codec, sample rate or
    /// encoder settings) may be decoded and encoded again. Without it such clips are refused
    /// with a `.incompatibleClips` error that names the clip and what differs.
    public var allowsReencoding: Bool
    /// Whether an existing output file may be replaced. It is replaced only once the merged
    /// file is complete.
    public var overwrite: Bool
    /// The output's container; `nil` takes it from the output's file extension.
    public var container: Container?

    /// Options with re-encoding and overwriting off and the container taken from the file name.
    public init(allowsReencoding: Bool = false, overwrite: Bool = false, container: Container? = nil) {
        self.allowsReencoding = allowsReencoding
        self.overwrite = overwrite
        self.container = container
    }
}

/// What ``Merger/merge(_:to:options:)`` wrote.
public struct MergeSummary: Sendable, Hashable {
    /// Where the merged file is.
    public var url: URL
    /// The length of the merged timeline: the sum of the clips' lengths.
    public var duration: MediaTime
    /// How many clips were joined.
    public var clipCount: Int
    /// The video frames in the merged file.
    public var videoFrames: Int64
    /// The positions in the input list (counted from zero) of the clips that were decoded and
    /// encoded again; empty when every packet was copied. When any clip needs re-encoding the
    /// whole merge is encoded again with the first clip's settings, so this lists every clip.
    public var reencodedClips: [Int]
    /// Why the clips were re-encoded (the first difference found), or `nil`.
    public var reencodingReason: String?
    /// The size of the merged file in bytes.
    public var bytes: Int64
}

/// Joins clips (the pieces of a paused and resumed recording, or any MP4/MOV/MKV files of the
/// same kind) into one file, one after the other.
///
/// Clips recorded with the same settings are joined by copying their packets, which takes about
/// as long as copying the files: the timestamps of each clip are moved to follow the one before,
/// and audio stays in step with video at every join. Clips that differ (size, codec, pixel
/// format, encoder settings, sample rate, channels) are refused, or with
/// ``MergeOptions/allowsReencoding`` decoded and encoded again with the first clip's settings.
///
/// The inputs are only read. The output is written under a temporary name in its folder and
/// takes its name only when complete; on failure nothing is left behind.
public enum Merger {
    /// Joins `inputs`, in order, into one file at `output`.
    ///
    /// - Throws: `ReelError` with `.incompatibleClips` (which clip differs from the first, and
    ///   how), `.invalidMedia` (a clip that is damaged, cut short or not a media file, named),
    ///   `.ioFailure` (a clip that does not exist), `.fileExists` (the output exists and
    ///   `overwrite` is off), `.insufficientStorage`, `.permissionDenied`,
    ///   `.invalidConfiguration` (no clips, or the output is one of the clips).
    public static func merge(_ inputs: [MergeInput], to output: URL, options: MergeOptions = .init()) throws -> MergeSummary {
        try merge(inputs, to: output, options: options, indexReservation: nil)
    }

    /// ``merge(_:to:options:)`` with the space reserved for an MP4/MOV index forced (tests):
    /// `nil` decides from the clips, 0 reserves none.
    static func merge(_ inputs: [MergeInput], to output: URL, options: MergeOptions, indexReservation: Int?) throws -> MergeSummary {
        FFmpeg.quietLogging
        guard !inputs.isEmpty else {
            throw ReelError(.invalidConfiguration, "there are no clips to merge", hint: "give at least one clip")
        }
        guard let container = options.container ?? Container(pathExtension: output.pathExtension) else {
            throw ReelError(.unsupportedFormat, "unknown file type '.\(output.pathExtension)' for \(output.lastPathComponent)",
                            hint: "name the output .mp4, .mov or .mkv")
        }
        try checkOutput(output, overwrite: options.overwrite, inputs: inputs)
        // A clip still being recorded is not complete: refused. The clips are held with shared
        // locks while they are read, so that neither a recorder nor a recovery rewrites one
        // under the merge.
        for input in inputs { try RecordingLock.checkNotBeingWritten(input.url) }
        let clips = try inputs.enumerated().map { try ClipFacts.probe($0.element.url, number: $0.offset + 1) }
        let locks = try inputs.map { try RecordingLock.lockExisting($0.url, exclusive: false) }
        defer { for lock in locks { lock.release() } }
        for clip in clips { try checkContainer(container, holds: clip, output: output) }

        var reason: Incompatibility? = clips.lazy.compactMap { $0.incompatibility(with: clips[0]) }.first
        var silence: [SilentPacket?] = []
        if reason == nil, inputs.contains(where: \.isMuted) {
            do {
                silence = try clips[0].audio.map { try SilentPacket(matching: $0) }
            } catch let needed as Incompatibility {
                reason = Incompatibility("\(clips[inputs.firstIndex(where: \.isMuted)!].label) is to be muted, but \(needed.message)",
                                         hint: needed.hint)
            }
        }
        if let reason, !options.allowsReencoding {
            throw ReelError(.incompatibleClips, reason.message, hint: reason.hint)
        }

        let temporary = temporaryURL(for: output)
        do {
            var duration = MediaTime.zero
            var frames: Int64 = 0
            if reason == nil {
                do {
                    (duration, frames) = try remux(clips, inputs: inputs, silence: silence, to: temporary, container: container,
                                                   reserve: indexReservation.map { $0 > 0 ? $0 : nil } ?? Self.indexReservation(for: clips, container: container))
                } catch let needed as Incompatibility {
                    try? FileManager.default.removeItem(at: temporary)
                    guard options.allowsReencoding else {
                        throw ReelError(.incompatibleClips, needed.message, hint: needed.hint)
                    }
                    reason = needed
                }
            }
            if reason != nil {
                (duration, frames) = try reencode(clips, inputs: inputs, to: temporary, container: container)
            }
            try place(temporary, at: output, overwrite: options.overwrite)
            let bytes = ((try? FileManager.default.attributesOfItem(atPath: output.path))?[.size] as? NSNumber)?.int64Value ?? 0
            return MergeSummary(url: output, duration: duration, clipCount: clips.count, videoFrames: frames,
                                reencodedClips: reason == nil ? [] : Array(clips.indices), reencodingReason: reason?.message,
                                bytes: bytes)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            if let needed = error as? Incompatibility {
                throw ReelError(.incompatibleClips, needed.message, hint: needed.hint)
            }
            if var failure = error as? ReelError, failure.code == .insufficientStorage {
                // The writer's hint names its file, which is gone: nothing of the merge is left.
                failure.hint = "free some disk space and merge again; the clips are unchanged"
                throw failure
            }
            throw error
        }
    }

    // MARK: The output file

    /// Refuses an output that exists (unless `overwrite`), is a folder, or is one of the clips.
    private static func checkOutput(_ output: URL, overwrite: Bool, inputs: [MergeInput]) throws {
        var target = stat()
        guard stat(output.path, &target) == 0 else { return }  // does not exist yet: the folder is checked on creation
        if (target.st_mode & S_IFMT) == S_IFDIR {
            throw ReelError(.fileExists, "\(output.path) is a folder", hint: "give a file name with -o")
        }
        for (i, input) in inputs.enumerated() {
            var s = stat()
            if stat(input.url.path, &s) == 0, s.st_dev == target.st_dev, s.st_ino == target.st_ino {
                throw ReelError(.invalidConfiguration, "the output \(output.path) is clip \(i + 1) (\(input.url.lastPathComponent)) itself",
                                hint: "write the merged file under a new name")
            }
        }
        if !overwrite {
            throw ReelError(.fileExists, "\(output.path) already exists", hint: "choose another name or pass --overwrite")
        }
        // Replacing is a rename, which no lock stops: a recording in progress is refused here.
        try RecordingLock.checkNotBeingWritten(output)
    }

    private static func checkContainer(_ container: Container, holds clip: ClipFacts, output: URL) throws {
        for stream in clip.streams {
            let fits: Bool
            if stream.kind == .video, let codec = stream.videoCodec {
                fits = container.canHold(codec)
            } else if stream.kind == .audio, let codec = stream.audioCodec {
                fits = container.canHold(codec)
            } else {
                fits = true  // libavformat decides when the header is written
            }
            if !fits {
                throw ReelError(.unsupportedFormat, "\(container.rawValue) files cannot hold the \(stream.codecLabel) of \(clip.label)",
                                hint: "merge into an .mkv file")
            }
        }
    }

    /// A hidden name next to `output` for the file being written.
    private static func temporaryURL(for output: URL) -> URL {
        let name = ".\(output.deletingPathExtension().lastPathComponent).merging-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        return output.deletingLastPathComponent().appendingPathComponent(output.pathExtension.isEmpty ? name : "\(name).\(output.pathExtension)")
    }

    /// Gives the complete file at `temporary` the name `output`: replacing a file there only if
    /// `overwrite`, and never a file that appeared meanwhile otherwise.
    private static func place(_ temporary: URL, at output: URL, overwrite: Bool) throws {
        func failure(_ e: Int32) -> ReelError { Syscall.fileError(e, creating: output, action: "name the merged file") }
        if overwrite {
            guard rename(temporary.path, output.path) == 0 else { throw failure(errno) }
            return
        }
        // A hard link fails if the name is taken: no window in which a new file could be replaced.
        if link(temporary.path, output.path) == 0 {
            unlink(temporary.path)
            return
        }
        let e = errno
        guard e == EPERM || e == EOPNOTSUPP || e == EMLINK || e == ENOSYS else { throw failure(e) }
        // A file system without hard links.
        guard access(output.path, F_OK) != 0 else { throw failure(EEXIST) }
        guard rename(temporary.path, output.path) == 0 else { throw failure(errno) }
    }

    // MARK: Joining by copying packets

    private static func remux(_ clips: [ClipFacts], inputs: [MergeInput], silence: [SilentPacket?], to url: URL,
                              container: Container, reserve: Int?) throws -> (MediaTime, Int64) {
        var reserve = reserve
        while true {
            do {
                var join: PacketJoin?
                for (i, clip) in clips.enumerated() {
                    // What the copy needs of later clips is known from probing them.
                    let input = try clip.open(readsStreamInfo: i == 0)
                    if join == nil {
                        join = try PacketJoin(url: url, container: container, first: clip, input: input, reservedIndexSize: reserve)
                    }
                    try join!.append(clip, from: input, isFirst: i == 0, silence: inputs[i].isMuted ? silence : nil)
                }
                try join!.finish()
                return (join!.offset, join!.videoPackets)
            } catch is IndexReservationTooSmall {
                // Never expected (the estimate is an upper bound), but then: the usual way.
                try? FileManager.default.removeItem(at: url)
                reserve = nil
            }
        }
    }

    /// The space to reserve for an MP4/MOV index at the front of the file, or `nil` to move the
    /// index there when the file is complete (libavformat's `faststart`, which reads and writes
    /// the whole file once more).
    ///
    /// The reservation is an upper bound from the clips' packet counts: the index needs at most
    /// 48 bytes a packet (sample size, time, composition offset, sync and dependency flags,
    /// chunk offset and chunk table entries, all at their worst) and the headers. The unused
    /// part stays as a `free` box; it is worth it when that is a small part of the file, which
    /// is when the second pass costs most.
    static func indexReservation(for clips: [ClipFacts], container: Container) -> Int? {
        guard container != .mkv else { return nil }
        var packets: Int64 = 0, bytes: Int64 = 0, headers: Int64 = 64 * 1024
        for clip in clips {
            for stream in clip.streams {
                guard stream.packetCount > 0 else { return nil }
                packets += stream.packetCount
            }
            var s = stat()
            guard stat(clip.url.path, &s) == 0 else { return nil }
            bytes += Int64(s.st_size)
        }
        headers += clips[0].streams.reduce(0) { $0 + Int64($1.extradata.count) }
        let bound = 48 * packets + headers
        return bound * 100 <= bytes ? Int(bound) : nil
    }

    // MARK: Joining by re-encoding

    private static func reencode(_ clips: [ClipFacts], inputs: [MergeInput], to url: URL, container: Container) throws -> (MediaTime, Int64) {
        let join = try EncodeJoin(url: url, container: container, clips: clips)
        do {
            for (i, clip) in clips.enumerated() {
                try join.append(clip, from: try clip.open(), muted: inputs[i].isMuted)
            }
            let summary = try join.finish()
            return (join.offset, summary.videoFrames)
        } catch {
            join.abandon()
            throw error
        }
    }
}

// MARK: - What a clip holds

/// Why clips cannot be joined by copying.
struct Incompatibility: Error {
    var message: String
    var hint: String
    init(_ message: String, hint: String) {
        self.message = message
        self.hint = hint
    }
}

/// The index did not fit the space reserved for it.
struct IndexReservationTooSmall: Error {}

/// The facts of one video or audio stream of a clip that decide whether clips can be joined.
struct StreamFacts {
    enum Kind { case video, audio }
    var kind: Kind
    /// The stream's index in its file.
    var index: Int
    var codecID: AVCodecID
    var width: Int32 = 0
    var height: Int32 = 0
    var pixelFormat: Int32 = -1
    var sampleRate: Int32 = 0
    var channels: Int32 = 0
    var layout: String = ""
    /// Samples per packet for codecs with a fixed frame size (AAC: 1024), else 0.
    var frameSize: Int32 = 0
    var bitRate: Int64 = 0
    var extradata: [UInt8] = []
    var timeBase: AVRational
    var frameRate: AVRational = AVRational(num: 0, den: 1)
    /// How many frames decoding runs ahead of presentation (B-frame reordering).
    var videoDelay: Int = 0
    /// Packets the file says the stream has (0 when it does not say).
    var packetCount: Int64
    var title: String?

    var codecName: String { cString(avcodec_get_name(codecID)) }

    var videoCodec: VideoCodec? {
        switch codecID {
        case AV_CODEC_ID_H264: return .h264
        case AV_CODEC_ID_HEVC: return .hevc
        case AV_CODEC_ID_VP9: return .vp9
        case AV_CODEC_ID_AV1: return .av1
        default: return nil
        }
    }

    var audioCodec: AudioCodec? {
        switch codecID {
        case AV_CODEC_ID_AAC: return .aac
        case AV_CODEC_ID_OPUS: return .opus
        default: return nil
        }
    }

    /// "H.264 video", "AAC audio".
    var codecLabel: String {
        let names = ["h264": "H.264", "hevc": "HEVC", "vp9": "VP9", "av1": "AV1", "aac": "AAC", "opus": "Opus"]
        return "\(names[codecName] ?? codecName) \(kind == .video ? "video" : "audio")"
    }

    var pixelFormatName: String {
        guard let name = av_get_pix_fmt_name(AVPixelFormat(rawValue: pixelFormat)) else { return "unknown" }
        return cString(name)
    }

    var size: PixelSize { PixelSize(width: Int(width), height: Int(height)) }

    init(_ stream: UnsafeMutablePointer<AVStream>, kind: Kind) {
        let par = stream.pointee.codecpar.pointee
        self.kind = kind
        index = Int(stream.pointee.index)
        codecID = par.codec_id
        timeBase = stream.pointee.time_base
        packetCount = stream.pointee.nb_frames
        bitRate = par.bit_rate
        if par.extradata_size > 0, let data = par.extradata {
            extradata = Array(UnsafeBufferPointer(start: data, count: Int(par.extradata_size)))
        }
        if let entry = av_dict_get(stream.pointee.metadata, "title", nil, 0) ?? av_dict_get(stream.pointee.metadata, "handler_name", nil, 0) {
            let value = cString(entry.pointee.value)
            if !["SoundHandler", "VideoHandler", ""].contains(value) { title = value }
        }
        switch kind {
        case .video:
            width = par.width
            height = par.height
            pixelFormat = par.format
            let avg = stream.pointee.avg_frame_rate, real = stream.pointee.r_frame_rate
            frameRate = avg.num > 0 && avg.den > 0 ? avg : real
            videoDelay = Int(min(max(par.video_delay, 0), 16))
        case .audio:
            sampleRate = par.sample_rate
            var layout = par.ch_layout
            channels = layout.nb_channels
            // A file that gives only a channel count (an MP4 without a channel layout box) means
            // the usual layout for that count: "2 channels" is stereo, as an MKV or MOV says.
            var usual = AVChannelLayout()
            defer { av_channel_layout_uninit(&usual) }
            if layout.order == AV_CHANNEL_ORDER_UNSPEC, channels > 0 {
                av_channel_layout_default(&usual, channels)
            }
            var text = [CChar](repeating: 0, count: 64)
            let described = usual.nb_channels > 0 ? av_channel_layout_describe(&usual, &text, text.count)
                                                  : av_channel_layout_describe(&layout, &text, text.count)
            if described >= 0 { self.layout = cString(text) }
            if par.codec_id == AV_CODEC_ID_AAC {
                frameSize = par.frame_size > 0 ? par.frame_size : Self.aacFrameSize(extradata)
            }
        }
    }

    /// Samples per AAC packet from the AudioSpecificConfig: 1024 (or 960) for the plain object
    /// types; 0 (unknown) for SBR and PS, whose packets decode to twice as many.
    static func aacFrameSize(_ config: [UInt8]) -> Int32 {
        guard config.count >= 2 else { return 0 }
        var bits = config.flatMap { byte in (0..<8).map { (byte >> (7 - $0)) & 1 } }[...]
        func read(_ n: Int) -> Int? {
            guard bits.count >= n else { return nil }
            defer { bits = bits.dropFirst(n) }
            return bits.prefix(n).reduce(0) { $0 << 1 | Int($1) }
        }
        guard var objectType = read(5) else { return 0 }
        if objectType == 31 { objectType = 32 + (read(6) ?? 0) }
        guard [1, 2, 3, 4, 6, 17, 19, 20, 21, 22, 23].contains(objectType), let rateIndex = read(4) else { return 0 }
        if rateIndex == 15 { _ = read(24) }
        guard read(4) != nil, let shortFrames = read(1) else { return 0 }
        return shortFrames == 1 ? 960 : 1024
    }

    /// The length of one frame when the time base cannot count it exactly, else `nil`.
    var inexactFrameDuration: MediaTime? {
        guard kind == .video, frameRate.num > 0, frameRate.den > 0 else { return nil }
        let exact = (Int64(timeBase.den) * Int64(frameRate.den)) % (Int64(timeBase.num) * Int64(frameRate.num)) == 0
        return exact ? nil : MediaTime(value: Int64(frameRate.den), timescale: frameRate.num)
    }

    /// The length of one frame in ticks of `timeBase`, when the frame rate is known.
    var frameDurationTicks: Int64 {
        guard kind == .video, frameRate.num > 0, frameRate.den > 0 else { return 0 }
        return max(1, av_rescale_q(1, AVRational(num: frameRate.den, den: frameRate.num), timeBase))
    }
}

/// What one clip holds: its video and audio streams and where its timeline starts.
struct ClipFacts {
    /// The clip's position in the merge, counted from one.
    var number: Int
    var url: URL
    /// The video and audio streams, in file order (other streams are left out of the merge).
    var streams: [StreamFacts]
    /// Whether the first video packet is a keyframe (true for clips without video).
    var startsWithKeyframe: Bool
    /// The presentation time of the first video frame: the clip's zero. Audio before it is
    /// the encoder's priming.
    var zero: MediaTime
    /// The longest the clip can plausibly be: its stated length (if the file states one) and
    /// at most a minute plus a second per 16 bytes of file. Timestamps past it are damage, and
    /// are refused rather than padded with hours of silence.
    var plausibleLength = MediaTime(value: 24 * 3600, timescale: 1)

    var label: String { "clip \(number) (\(url.lastPathComponent))" }
    var video: StreamFacts? { streams.first { $0.kind == .video } }
    var audio: [StreamFacts] { streams.filter { $0.kind == .audio } }

    /// Opens the clip's file, turning failures into errors that name the clip.
    func open(readsStreamInfo: Bool = true) throws -> InputFile {
        do {
            return try InputFile(url: url, readsStreamInfo: readsStreamInfo)
        } catch let error as ReelError where error.code == .invalidMedia {
            throw ReelError(.invalidMedia, "\(label) is damaged or not a video file: \(url.path) (\(error.message.components(separatedBy: ": ").last ?? ""))",
                            hint: "check that it is a complete MP4, MOV or MKV file", averror: error.averror)
        }
    }

    /// Reads what the file at `url` holds, up to its first video packet.
    static func probe(_ url: URL, number: Int) throws -> ClipFacts {
        let label = "clip \(number) (\(url.lastPathComponent))"
        var s = stat()
        guard stat(url.path, &s) == 0 else {
            let e = errno
            throw ReelError(Syscall.code(forErrno: e, absent: .ioFailure), "\(label) cannot be read: \(url.path): \(Syscall.describe(e))",
                            hint: e == ENOENT ? "check the file name" : nil, errno: e)
        }
        guard (s.st_mode & S_IFMT) == S_IFREG else {
            throw ReelError(.invalidMedia, "\(label) is not a file: \(url.path)", hint: "give the clips' file names")
        }
        guard access(url.path, R_OK) == 0 else {
            let e = errno
            throw ReelError(Syscall.code(forErrno: e, absent: .ioFailure), "\(label) cannot be read: \(url.path): \(Syscall.describe(e))",
                            hint: "check the file's permissions", errno: e)
        }
        var facts = ClipFacts(number: number, url: url, streams: [], startsWithKeyframe: true, zero: .zero)
        facts.plausibleLength = MediaTime(value: 60 + Int64(s.st_size) / 16, timescale: 1)
        // An MP4/MOV header says all that the merge compares; other files have libavformat look
        // into their first packets (which decodes a few frames: a few ms a clip).
        let input = try facts.open(readsStreamInfo: false)
        let ctx = input.context
        if ctx.pointee.duration > 0 {
            // AV_TIME_BASE (microseconds).
            facts.plausibleLength = min(facts.plausibleLength, MediaTime(value: ctx.pointee.duration, timescale: 1_000_000) + MediaTime(value: 10, timescale: 1))
        }
        if !cString(ctx.pointee.iformat.pointee.name).hasPrefix("mov,") {
            let r = avformat_find_stream_info(ctx, nil)
            if r < 0 { throw facts.damaged(r) }
        }
        for i in 0..<Int(ctx.pointee.nb_streams) {
            let stream = ctx.pointee.streams[i]!
            switch stream.pointee.codecpar.pointee.codec_type {
            case AVMEDIA_TYPE_VIDEO where stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC == 0:
                facts.streams.append(StreamFacts(stream, kind: .video))
            case AVMEDIA_TYPE_AUDIO:
                facts.streams.append(StreamFacts(stream, kind: .audio))
            default:
                break
            }
        }
        guard !facts.streams.isEmpty else {
            throw ReelError(.invalidMedia, "\(label) has neither video nor audio: \(url.path)")
        }
        if facts.streams.filter({ $0.kind == .video }).count > 1 {
            throw ReelError(.unsupportedFormat, "\(label) has more than one video track", hint: "merge clips with one video track")
        }
        guard let video = facts.video else { return facts }
        let packet = av_packet_alloc()!
        defer { var p: UnsafeMutablePointer<AVPacket>? = packet; av_packet_free(&p) }
        while true {
            let r = av_read_frame(ctx, packet)
            if r == FFmpeg.eof {
                throw ReelError(.invalidMedia, "\(label) has no video frames: \(url.path)", hint: "check that it is a complete recording")
            }
            if r < 0 { throw facts.damaged(r) }
            defer { av_packet_unref(packet) }
            guard Int(packet.pointee.stream_index) == video.index else { continue }
            let t = packet.pointee.pts != FFmpeg.noPTS ? packet.pointee.pts : packet.pointee.dts
            guard t != FFmpeg.noPTS else { throw ReelError(.invalidMedia, "\(label) has video without timestamps: \(url.path)") }
            facts.zero = MediaTime(ticks: t, video.timeBase)
            facts.startsWithKeyframe = packet.pointee.flags & AV_PKT_FLAG_KEY != 0
            return facts
        }
    }

    /// The error for a clip that cannot be read to its end.
    func damaged(_ code: Int32) -> ReelError {
        ReelError(.invalidMedia, "\(label) is damaged or cut short: \(url.path) (\(FFmpeg.describe(code)))",
                  hint: "merge only complete recordings", averror: code)
    }

    /// Why this clip cannot follow `first` by copying packets, or `nil` if it can.
    func incompatibility(with first: ClipFacts) -> Incompatibility? {
        func tracks(_ c: ClipFacts) -> String {
            let a = c.audio.count
            let audio = a == 0 ? "no audio" : a == 1 ? "one audio track" : "\(a) audio tracks"
            return (c.video == nil ? "no video and " : "video and ") + audio
        }
        let reencode = "allow re-encoding (reel merge --reencode)"
        if streams.map(\.kind) != first.streams.map(\.kind) {
            return Incompatibility("\(label) has \(tracks(self)) but clip 1 has \(tracks(first))",
                                   hint: "\(reencode) or merge clips with the same tracks")
        }
        var audioNumber = 0
        for (mine, theirs) in zip(streams, first.streams) {
            switch mine.kind {
            case .video:
                if mine.codecID != theirs.codecID {
                    return Incompatibility("\(label) has \(mine.codecLabel) but clip 1 has \(theirs.codecLabel)",
                                           hint: "\(reencode) or merge clips of one codec")
                }
                if mine.width != theirs.width || mine.height != theirs.height {
                    return Incompatibility("\(label) is \(mine.size) but clip 1 is \(theirs.size)",
                                           hint: "\(reencode) or merge clips of one size")
                }
                // Unknown (-1) where only the header was read; the codec header compared next says it too.
                if mine.pixelFormat != theirs.pixelFormat && mine.pixelFormat >= 0 && theirs.pixelFormat >= 0 {
                    return Incompatibility("\(label) has pixel format \(mine.pixelFormatName) but clip 1 has \(theirs.pixelFormatName)",
                                           hint: "\(reencode) or merge clips of one pixel format")
                }
                if mine.extradata != theirs.extradata {
                    let what = mine.codecID == AV_CODEC_ID_H264 || mine.codecID == AV_CODEC_ID_HEVC ? " (SPS/PPS)" : ""
                    return Incompatibility("\(label) was encoded with other \(mine.codecLabel) settings\(what) than clip 1",
                                           hint: "\(reencode) or merge clips recorded with the same settings")
                }
            case .audio:
                audioNumber += 1
                let track = first.audio.count > 1 ? "audio track \(audioNumber)" : "audio"
                if mine.codecID != theirs.codecID {
                    return Incompatibility("\(label) has \(mine.codecLabel) but clip 1 has \(theirs.codecLabel)",
                                           hint: "\(reencode) or merge clips of one audio codec")
                }
                if mine.sampleRate != theirs.sampleRate {
                    return Incompatibility("\(label)'s \(track) is \(mine.sampleRate) Hz but clip 1's is \(theirs.sampleRate) Hz",
                                           hint: "\(reencode) or merge clips of one sample rate")
                }
                if mine.channels != theirs.channels || mine.layout != theirs.layout {
                    return Incompatibility("\(label)'s \(track) is \(mine.layout) but clip 1's is \(theirs.layout)",
                                           hint: "\(reencode) or merge clips with the same channels")
                }
                if mine.extradata != theirs.extradata {
                    return Incompatibility("\(label)'s \(track) was encoded with other \(mine.codecLabel) settings than clip 1's",
                                           hint: "\(reencode) or merge clips recorded with the same settings")
                }
            }
        }
        if !startsWithKeyframe {
            return Incompatibility("\(label) does not start with a keyframe, so it cannot be joined without re-encoding",
                                   hint: reencode)
        }
        return nil
    }
}

/// Follows where a clip's streams end, to know the clip's length.
struct ClipLength {
    private var ends: [Int: MediaTime] = [:]
    private var longestPacket: [Int: MediaTime] = [:]

    /// Notes a packet of stream `index` from `start` (relative to the clip's zero) lasting `duration`.
    mutating func note(stream index: Int, start: MediaTime, duration: MediaTime) {
        let end = start + duration
        if let current = ends[index] { if current < end { ends[index] = end } } else { ends[index] = end }
        if let current = longestPacket[index] { if current < duration { longestPacket[index] = duration } } else { longestPacket[index] = duration }
    }

    /// The clip's length: where its video ends. Audio ends with the video in Reel's clips (give
    /// or take the encoder's last, padded packet); a stream that goes on for longer than one of
    /// its packets makes the clip that long (files from elsewhere).
    ///
    /// `grid` is the video's frame duration when its time base cannot hold it exactly (Matroska's
    /// milliseconds): the video's end is then put on the frame grid, so that rounding does not
    /// add up from clip to clip.
    func length(video: Int?, grid: MediaTime? = nil) -> MediaTime {
        var length = video.flatMap { ends[$0] } ?? .zero
        if let grid, grid > .zero, video != nil {
            let frames = length.convertedValue(to: grid.timescale, rounding: .nearest) / max(grid.value, 1)
            let snapped = MediaTime(value: frames * grid.value, timescale: grid.timescale)
            if (length - snapped).seconds.magnitude < grid.seconds / 4 { length = snapped }
        }
        for (index, end) in ends where index != video {
            let slack = video == nil ? .zero : (longestPacket[index] ?? .zero)
            if length + slack < end { length = end }
        }
        return length
    }
}

// MARK: - Copying packets

/// Writes clips one after the other into one file by copying their packets, moving each clip's
/// timestamps to follow the one before.
final class PacketJoin {
    private let muxer: Muxer
    private let packet: UnsafeMutablePointer<AVPacket>
    /// Per output stream: the time base the timeline is counted in (the first clip's).
    private var timeBases: [AVRational] = []
    private var lastDTS: [Int64]
    /// Per audio stream: where the audio written so far ends when decoded sample after sample
    /// (ticks of `timeBases`).
    private var decodedEnd: [Int64?]
    /// The start of the next clip on the merged timeline.
    private(set) var offset = MediaTime.zero
    private(set) var videoPackets: Int64 = 0

    private let reservedIndexSize: Int?

    init(url: URL, container: Container, first: ClipFacts, input: InputFile, reservedIndexSize: Int?) throws {
        self.reservedIndexSize = reservedIndexSize
        muxer = try Muxer(url: url, container: container, overwrite: false)
        // The muxer opened the file it had just created with O_TRUNC. For a truncated file ext4
        // writes all the data out when it is closed (its guard for files replaced in place),
        // which here would add a tenth of a second per 500 MB for nothing: reopen the file,
        // still empty, without truncating.
        avio_closep(&muxer.context.pointee.pb)
        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        av_dict_set(&options, "truncate", "0", 0)
        let opened = avio_open2(&muxer.context.pointee.pb, url.path, AVIO_FLAG_WRITE, nil, &options)
        if opened < 0 { throw FFmpeg.error(opened, "cannot open \(url.path) for writing", code: .ioFailure) }
        packet = av_packet_alloc()
        lastDTS = Array(repeating: Int64.min, count: first.streams.count)
        decodedEnd = Array(repeating: nil, count: first.streams.count)
        for facts in first.streams {
            let stream = try Remuxer.addStream(copying: input.context.pointee.streams[facts.index]!, of: input.url, to: muxer)
            timeBases.append(stream.pointee.time_base)
        }
        av_dict_copy(&muxer.context.pointee.metadata, input.context.pointee.metadata, 0)
        try Remuxer.writeHeader(muxer, fastStart: true, reservedIndexSize: reservedIndexSize)
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
    }

    /// Copies every packet of `clip` to the end of the timeline. With `silence`, the clip's
    /// audio packets are replaced by silent ones of the same length.
    func append(_ clip: ClipFacts, from input: InputFile, isFirst: Bool, silence: [SilentPacket?]?) throws {
        let ctx = input.context
        var position = [Int](repeating: -1, count: Int(ctx.pointee.nb_streams))
        for (i, s) in clip.streams.enumerated() { position[s.index] = i }
        var read = [Int64](repeating: 0, count: clip.streams.count)
        var started = [Bool](repeating: false, count: clip.streams.count)
        var shorterPackets = [Int](repeating: 0, count: clip.streams.count)
        var guesses = clip.streams.map { DecodeTimeGuess(delay: $0.kind == .video ? $0.videoDelay : 0) }
        var length = ClipLength()
        let videoPosition = clip.streams.firstIndex { $0.kind == .video }

        while true {
            let r = av_read_frame(ctx, packet)
            if r == FFmpeg.eof { break }
            if r < 0 { throw clip.damaged(r) }
            defer { av_packet_unref(packet) }
            let index = Int(packet.pointee.stream_index)
            guard index < position.count, position[index] >= 0 else { continue }
            let j = position[index]
            read[j] += 1
            if packet.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 { throw clip.damaged(averrorInvalidData) }
            let facts = clip.streams[j]
            let tb = timeBases[j]
            // Times relative to the clip's zero, in the timeline's time base.
            let zero = clip.zero.ticks(in: facts.timeBase)
            var pts = packet.pointee.pts, dts = packet.pointee.dts
            if pts == FFmpeg.noPTS { pts = dts }
            guard pts != FFmpeg.noPTS else {
                throw ReelError(.invalidMedia, "\(clip.label) has packets without timestamps: \(clip.url.path)")
            }
            if dts == FFmpeg.noPTS {
                // Matroska stores no decoding times; the first packets may lack FFmpeg's guess.
                dts = guesses[j].decodeTime(pts: pts, duration: packet.pointee.duration > 0 ? packet.pointee.duration : facts.frameDurationTicks)
            }
            let start = av_rescale_q(pts - zero, facts.timeBase, tb)
            let decode = av_rescale_q(dts - zero, facts.timeBase, tb)
            var duration = av_rescale_q(packet.pointee.duration, facts.timeBase, tb)
            if duration <= 0, facts.kind == .video { duration = av_rescale_q(facts.frameDurationTicks, facts.timeBase, tb) }
            length.note(stream: j, start: MediaTime(ticks: start, tb), duration: MediaTime(ticks: max(duration, 0), tb))
            let base = offset.ticks(in: tb)

            if facts.kind == .audio {
                // The length the decoder gives a packet, whatever the container says of the last one.
                let decoded = facts.frameSize > 0 ? av_rescale_q(Int64(facts.frameSize), AVRational(num: 1, den: facts.sampleRate), tb) : duration
                if !isFirst {
                    // Priming before the clip's zero: the previous clip's audio plays there.
                    if start + max(decoded, duration) <= 0 { continue }
                    if !started[j] {
                        // Every packet decodes to a whole frame of samples, so one clip's audio
                        // never ends exactly where the next one's starts: the last packet is
                        // padded, the next clip's first may begin before its zero. Timestamps
                        // stay exact (players that follow them are in step); players that play
                        // samples one after the other must not drift either, so a packet that
                        // would decode mostly under the previous clip's end is left out. The
                        // audio is then never more than half a packet (10.7 ms of AAC at 48 kHz)
                        // from its place, however many joins there are.
                        if let end = decodedEnd[j] {
                            let error = end - (base + start)
                            if error * 2 > decoded { continue }
                        }
                        started[j] = true
                    }
                }
                decodedEnd[j] = (decodedEnd[j] ?? (base + start)) + decoded
                if let silence, let silent = silence[clip.audio.firstIndex { $0.index == facts.index }!] {
                    // A silent packet decodes to one encoder frame: every packet it stands in
                    // for must be as long (a clip's last packet may be shorter).
                    let length = av_rescale_q(decoded, tb, AVRational(num: 1, den: facts.sampleRate))
                    if length != silent.sampleCount {
                        shorterPackets[j] += 1
                        if length > silent.sampleCount || shorterPackets[j] > 1 {
                            throw Incompatibility("\(clip.label) is to be muted, but its \(facts.codecLabel) packets are not \(silent.sampleCount) samples long, so silence cannot be slipped in without re-encoding",
                                                  hint: "allow re-encoding (reel merge --reencode)")
                        }
                    }
                    let flags = packet.pointee.flags
                    av_packet_unref(packet)
                    try FFmpeg.check(av_packet_ref(packet, silent.packet), "cannot make a silent packet")
                    packet.pointee.flags = flags
                }
            }

            packet.pointee.stream_index = Int32(j)
            packet.pointee.pos = -1
            packet.pointee.flags &= ~AV_PKT_FLAG_DISCARD
            let stream = muxer.context.pointee.streams[j]!
            let out = stream.pointee.time_base
            var outPTS = av_rescale_q(base + start, tb, out)
            var outDTS = av_rescale_q(base + decode, tb, out)
            if lastDTS[j] != Int64.min && outDTS <= lastDTS[j] {
                // A clip whose decoding starts earlier before its first frame than the previous
                // clip's did: its first decoding times would collide with the previous clip's last.
                outDTS = lastDTS[j] + 1
                if facts.kind == .audio { outPTS = max(outPTS, outDTS) }
                guard outDTS <= outPTS else {
                    throw Incompatibility("\(clip.label) cannot follow the clip before it without re-encoding: its frames would be decoded before the previous clip's last",
                                          hint: "allow re-encoding (reel merge --reencode)")
                }
            }
            lastDTS[j] = outDTS
            packet.pointee.pts = outPTS
            packet.pointee.dts = outDTS
            packet.pointee.duration = av_rescale_q(duration, tb, out)
            if facts.kind == .video { videoPackets += 1 }
            try FFmpeg.check(av_interleaved_write_frame(muxer.context, packet), "cannot write \(muxer.url.lastPathComponent)", code: .ioFailure)
        }
        // A file cut short may end without an error: it then holds fewer packets than its index says.
        for (j, facts) in clip.streams.enumerated() where facts.packetCount > 0 && read[j] < facts.packetCount {
            throw ReelError(.invalidMedia, "\(clip.label) is cut short: \(clip.url.path) holds \(read[j]) of its \(facts.packetCount) \(facts.kind == .video ? "video" : "audio") packets",
                            hint: "merge only complete recordings")
        }
        offset += length.length(video: videoPosition, grid: videoPosition.flatMap { clip.streams[$0].inexactFrameDuration })
    }

    /// Writes the index (at the front of an MP4/MOV) and closes the file.
    func finish() throws {
        let r = av_write_trailer(muxer.context)
        if r == reel_averror(EINVAL) && reservedIndexSize != nil { throw IndexReservationTooSmall() }
        try FFmpeg.check(r, "cannot finish \(muxer.url.lastPathComponent)", code: .ioFailure)
        if let pb = muxer.context.pointee.pb {
            avio_flush(pb)
            if pb.pointee.error < 0 {
                throw FFmpeg.error(pb.pointee.error, "cannot write \(muxer.url.lastPathComponent)", code: .ioFailure)
            }
        }
        muxer.abandon()
    }
}

/// Decoding times for packets that have none, from their presentation times and the stream's
/// reorder delay (what libavformat does for muxers).
struct DecodeTimeGuess {
    private var times: [Int64]
    private let delay: Int

    init(delay: Int) {
        self.delay = delay
        times = Array(repeating: FFmpeg.noPTS, count: delay + 1)
    }

    mutating func decodeTime(pts: Int64, duration: Int64) -> Int64 {
        times[0] = pts
        var i = 1
        while i <= delay && times[i] == FFmpeg.noPTS {
            times[i] = pts + Int64(i - delay - 1) * duration
            i += 1
        }
        i = 0
        while i < delay && times[i] > times[i + 1] {
            times.swapAt(i, i + 1)
            i += 1
        }
        return times[0]
    }
}

// MARK: - Silence

/// One packet of encoded silence that can stand in for any audio packet of a stream: made by
/// an encoder of the same codec, sample rate and channels, whose codec header matches the
/// stream's byte for byte.
final class SilentPacket {
    let packet: UnsafeMutablePointer<AVPacket>
    /// The samples the packet decodes to.
    let sampleCount: Int64

    init(matching stream: StreamFacts) throws {
        guard let codec = stream.audioCodec, stream.frameSize > 0 || codec == .opus else {
            throw Incompatibility("its \(stream.codecLabel) cannot be replaced by silence without re-encoding",
                                  hint: "allow re-encoding (reel merge --reencode)")
        }
        let settings = AudioSettings(codec: codec, sampleRate: Int(stream.sampleRate), channels: Int(stream.channels),
                                     bitRate: Self.bitRate(stream.bitRate, codec: codec, channels: Int(stream.channels)))
        let format = AudioFormat(sampleFormat: .f32, sampleRate: settings.sampleRate, channels: settings.channels)
        let encoder: AudioEncoder
        do {
            try settings.validate()
            encoder = try AudioEncoder(settings: settings, inputFormat: format, globalHeader: true)
        } catch {
            throw Incompatibility("its \(stream.codecLabel) (\(stream.sampleRate) Hz, \(stream.layout)) cannot be replaced by silence without re-encoding",
                                  hint: "allow re-encoding (reel merge --reencode)")
        }
        let ctx = encoder.context.pointee
        let header = ctx.extradata_size > 0 ? Array(UnsafeBufferPointer(start: ctx.extradata, count: Int(ctx.extradata_size))) : []
        // Opus headers carry the encoder's delay, which may differ by encoder version: what matters is the codec.
        guard header == stream.extradata || codec == .opus else {
            throw Incompatibility("its \(stream.codecLabel) was made by another encoder, so silence cannot be slipped in without re-encoding",
                                  hint: "allow re-encoding (reel merge --reencode)")
        }
        // A packet from well after the start, where the encoder has settled on pure silence.
        var packets: [UnsafeMutablePointer<AVPacket>?] = []
        let zeros = AudioBuffer.silence(format: format, frameCount: 8 * 1024, at: .zero)
        try encoder.append(zeros) { p in packets.append(av_packet_clone(p)) }
        defer { for p in packets { var q = p; av_packet_free(&q) } }
        guard packets.count >= 4, let chosen = packets[packets.count - 2], let copy = av_packet_clone(chosen) else {
            throw ReelError(.encodingFailed, "cannot encode silence for \(stream.codecLabel)")
        }
        packet = copy
        sampleCount = copy.pointee.duration > 0 ? av_rescale_q(copy.pointee.duration, encoder.timeBase, AVRational(num: 1, den: stream.sampleRate))
                                                : Int64(encoder.context.pointee.frame_size)
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
    }

    /// A clip's audio bit rate as the encoder takes it: within the codec's range, 160 kb/s if unknown.
    static func bitRate(_ stated: Int64, codec: AudioCodec, channels: Int) -> Int {
        let range = codec.bitRateRange(channels: min(max(channels, 1), 2))
        return stated > 0 ? Int(min(max(stated, Int64(range.lowerBound)), Int64(range.upperBound))) : min(max(160_000, range.lowerBound), range.upperBound)
    }
}

// MARK: - Re-encoding

/// Writes clips one after the other into one file by decoding them and encoding them again
/// with the first clip's size, frame rate and video codec. Audio track N takes its codec,
/// sample rate and channels from the first clip that has an Nth audio track, so no clip's audio
/// is lost; clips without it are silent there.
final class EncodeJoin {
    private let writer: AssetWriter
    private let picture: PictureConverter?
    private let audioFormats: [AudioFormat]
    /// Samples handed to each audio track so far.
    private var fed: [Int64]
    private(set) var offset = MediaTime.zero

    init(url: URL, container: Container, clips: [ClipFacts]) throws {
        let first = clips[0]
        if first.video == nil, let later = clips.first(where: { $0.video != nil }) {
            throw ReelError(.incompatibleClips, "\(later.label) has video but clip 1 has none",
                            hint: "merge clips that all have video, or put a clip with video first")
        }
        var video: AssetWriter.VideoTrack?
        if let v = first.video {
            let rate = v.frameRate.num > 0 && v.frameRate.den > 0 && Double(v.frameRate.num) / Double(v.frameRate.den) <= 240
                ? FrameRate(v.frameRate.num, per: v.frameRate.den) : FrameRate(30)
            let codec = v.videoCodec.flatMap { container.canHold($0) && VideoEncoder.isAvailable($0) ? $0 : nil } ?? .h264
            let size = PixelSize(width: Int(v.width) & ~1, height: Int(v.height) & ~1)
            video = AssetWriter.VideoTrack(settings: VideoSettings(codec: codec, size: size, frameRate: rate),
                                           inputFormat: .yuv420p, inputSize: size)
        }
        var audio: [AssetWriter.AudioTrack] = []
        let trackCount = clips.map(\.audio.count).max() ?? 0
        for t in 0..<trackCount {
            let a = clips.first { $0.audio.count > t }!.audio[t]
            let codec = a.audioCodec.flatMap { container.canHold($0) ? $0 : nil } ?? container.defaultAudioCodec
            let channels = Int(min(max(a.channels, 1), 2))
            var settings = AudioSettings(codec: codec, sampleRate: Int(a.sampleRate), channels: channels,
                                         bitRate: SilentPacket.bitRate(a.bitRate, codec: codec, channels: channels))
            if (try? settings.validate()) == nil { settings.sampleRate = 48_000 }
            audio.append(AssetWriter.AudioTrack(settings: settings,
                                                inputFormat: AudioFormat(sampleFormat: .f32, sampleRate: settings.sampleRate, channels: settings.channels),
                                                title: a.title))
        }
        writer = try AssetWriter(configuration: AssetWriter.Configuration(url: url, container: container, video: video, audio: audio))
        picture = video.map { PictureConverter(size: $0.inputSize) }
        audioFormats = audio.map(\.inputFormat)
        fed = Array(repeating: 0, count: audio.count)
    }

    /// Decodes `clip` and encodes it at the end of the timeline; a `muted` clip's audio is silence.
    func append(_ clip: ClipFacts, from input: InputFile, muted: Bool) throws {
        let ctx = input.context
        var position = [Int](repeating: -1, count: Int(ctx.pointee.nb_streams))
        for (i, s) in clip.streams.enumerated() { position[s.index] = i }
        let videoPosition = clip.streams.firstIndex { $0.kind == .video }
        if picture != nil && videoPosition == nil {
            throw ReelError(.incompatibleClips, "\(clip.label) has no video but clip 1 has", hint: "merge clips that all have video")
        }
        let videoDecoder = picture == nil ? nil : try videoPosition.map { try Decoder(input: input, stream: clip.streams[$0].index) }
        let audioStreams = clip.audio
        clipLimit = offset + clip.plausibleLength
        clipLabel = clip.label
        tracks = []
        for (t, format) in audioFormats.enumerated() {
            let source = !muted && t < audioStreams.count ? audioStreams[t] : nil
            tracks.append(AudioTrackFeed(format: format, start: fed[t],
                                         decoder: try source.map { try Decoder(input: input, stream: $0.index) },
                                         zero: source.map { clip.zero.ticks(in: $0.timeBase) } ?? 0,
                                         limit: clip.plausibleLength, label: clip.label))
        }
        var length = ClipLength()
        let packet = av_packet_alloc()!
        defer { var p: UnsafeMutablePointer<AVPacket>? = packet; av_packet_free(&p) }
        var read = [Int64](repeating: 0, count: clip.streams.count)
        let videoZero = videoPosition.map { clip.zero.ticks(in: clip.streams[$0].timeBase) } ?? 0

        func drainVideo() throws {
            guard let decoder = videoDecoder, let picture else { return }
            while try decoder.receive() == .frame {
                guard let ts = decoder.frameTimestamp else { continue }
                let t = MediaTime(ticks: ts - videoZero, decoder.timeBase)
                guard t >= .zero else { continue }
                let frame = try picture.convert(decoder.frame)
                try writer.appendVideo(frame, at: offset + t)
                // Silent tracks keep up with the video, so the file stays interleaved.
                for t2 in tracks.indices where tracks[t2].decoder == nil {
                    try feed(track: t2, silenceUntil: offset + t)
                }
            }
        }
        func drainAudio(_ t: Int) throws {
            guard let decoder = tracks[t].decoder else { return }
            while try decoder.receive() == .frame {
                try tracks[t].take(decoder: decoder)
                try flushAudio(t, keeping: tracks[t].format.sampleRate / 2)
            }
        }

        while true {
            let r = av_read_frame(ctx, packet)
            if r == FFmpeg.eof { break }
            if r < 0 { throw clip.damaged(r) }
            defer { av_packet_unref(packet) }
            let index = Int(packet.pointee.stream_index)
            guard index < position.count, position[index] >= 0 else { continue }
            let j = position[index]
            read[j] += 1
            if packet.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 { throw clip.damaged(averrorInvalidData) }
            let facts = clip.streams[j]
            let zero = clip.zero.ticks(in: facts.timeBase)
            let pts = packet.pointee.pts != FFmpeg.noPTS ? packet.pointee.pts : packet.pointee.dts
            if pts != FFmpeg.noPTS {
                var duration = packet.pointee.duration
                if duration <= 0 { duration = facts.frameDurationTicks }
                length.note(stream: j, start: MediaTime(ticks: pts - zero, facts.timeBase), duration: MediaTime(ticks: max(0, duration), facts.timeBase))
            }
            if j == videoPosition, let videoDecoder {
                try videoDecoder.send(packet)
                try drainVideo()
            } else if let t = audioStreams.firstIndex(where: { $0.index == facts.index }), t < tracks.count, let decoder = tracks[t].decoder {
                try decoder.send(packet)
                try drainAudio(t)
            }
        }
        for (j, facts) in clip.streams.enumerated() where facts.packetCount > 0 && read[j] < facts.packetCount {
            throw ReelError(.invalidMedia, "\(clip.label) is cut short: \(clip.url.path) holds \(read[j]) of its \(facts.packetCount) packets",
                            hint: "merge only complete recordings")
        }
        if let videoDecoder {
            try videoDecoder.send(nil)
            try drainVideo()
        }
        for t in tracks.indices {
            if let decoder = tracks[t].decoder {
                try decoder.send(nil)
                try drainAudio(t)
                try tracks[t].finish()
            }
        }
        let end = offset + length.length(video: videoPosition, grid: videoPosition.flatMap { clip.streams[$0].inexactFrameDuration })
        guard end <= clipLimit else { throw damagedTimestamps(end - offset) }
        for t in tracks.indices {
            // Exactly the clip's length of audio: what was decoded, cut or padded with silence.
            let target = end.convertedValue(to: Int32(audioFormats[t].sampleRate)) - fed[t]
            try flushAudio(t, keeping: 0, limit: target)
            try feed(track: t, silenceUntil: end)
        }
        offset = end
    }

    /// Hands track `t` what it has decoded, but for the last `keeping` samples (which may lie
    /// past the clip's end) and never more than `limit` samples.
    private func flushAudio(_ t: Int, keeping: Int, limit: Int64 = .max) throws {
        let count = min(Int64(tracks[t].pendingFrames - keeping), limit)
        guard count > 0 else { return }
        let data = tracks[t].takeFrames(Int(count))
        try writer.appendAudio(AudioBuffer(format: audioFormats[t], presentationTime: .zero, data: data), track: t)
        fed[t] += count
    }

    /// Pads track `t` with silence up to `time` on the merged timeline, a second at a time.
    private func feed(track t: Int, silenceUntil time: MediaTime) throws {
        guard time <= clipLimit else { throw damagedTimestamps(time - offset) }
        let rate = audioFormats[t].sampleRate
        let target = time.convertedValue(to: Int32(rate))
        guard target > fed[t] else { return }
        tracks[t].clear()
        while fed[t] < target {
            let count = Int(min(target - fed[t], Int64(rate)))
            try writer.appendAudio(AudioBuffer.silence(format: audioFormats[t], frameCount: count, at: .zero), track: t)
            fed[t] += Int64(count)
        }
    }

    /// The end of the clip being appended may not lie past this.
    private var clipLimit = MediaTime.zero
    private var clipLabel = ""

    private func damagedTimestamps(_ time: MediaTime) -> ReelError {
        ReelError(.invalidMedia, "\(clipLabel) is damaged: its timestamps run to \(Int(time.seconds)) s, past its length",
                  hint: "merge only complete recordings")
    }

    private var tracks: [AudioTrackFeed] = []

    func finish() throws -> AssetWriter.Summary { try writer.finish() }

    func abandon() { writer.abandon() }
}

/// The decoded audio of one track of one clip on its way into the writer: converted to the
/// track's format, placed by its timestamps (priming before the clip's zero dropped, a late
/// start padded), held until handed on.
struct AudioTrackFeed {
    let format: AudioFormat
    let decoder: Decoder?
    /// The clip's zero in ticks of the decoder's time base.
    let zero: Int64
    private let converter: SoundConverter
    private var samples: [Float] = []
    private var consumed = 0
    private var started = false
    private var skip: Int64 = 0
    /// The latest a clip's audio may start, in samples; later is damage.
    private let limit: Int64
    private let label: String

    init(format: AudioFormat, start: Int64, decoder: Decoder?, zero: Int64, limit: MediaTime, label: String) {
        self.format = format
        self.decoder = decoder
        self.zero = zero
        self.limit = limit.convertedValue(to: Int32(format.sampleRate))
        self.label = label
        converter = SoundConverter(format: format)
    }

    /// Sample frames decoded and not yet handed on.
    var pendingFrames: Int { (samples.count - consumed) / format.channels }

    mutating func take(decoder: Decoder) throws {
        var converted = try converter.convert(decoder.frame)
        if !started, let ts = decoder.frameTimestamp {
            started = true
            let position = av_rescale_q(ts - zero, decoder.timeBase, AVRational(num: 1, den: Int32(format.sampleRate)))
            guard position <= limit else {
                throw ReelError(.invalidMedia, "\(label) is damaged: its audio starts \(position / Int64(format.sampleRate)) s in, past its length",
                                hint: "merge only complete recordings")
            }
            if position > 0 {
                samples.append(contentsOf: repeatElement(0, count: Int(position) * format.channels))
            } else {
                skip = -position
            }
        }
        if skip > 0 {
            let drop = min(Int(skip), converted.count / format.channels)
            converted.removeFirst(drop * format.channels)
            skip -= Int64(drop)
        }
        samples.append(contentsOf: converted)
    }

    mutating func finish() throws {
        samples.append(contentsOf: try converter.flush())
    }

    mutating func takeFrames(_ count: Int) -> [UInt8] {
        let end = consumed + count * format.channels
        let bytes = samples[consumed..<end].withUnsafeBytes { Array($0) }
        consumed = end
        if consumed > 1 << 16 {
            samples.removeFirst(consumed)
            consumed = 0
        }
        return bytes
    }

    mutating func clear() {
        samples.removeAll(keepingCapacity: true)
        consumed = 0
    }
}

// MARK: - Helpers

/// `AVERROR_INVALIDDATA`, a macro Swift cannot import.
let averrorInvalidData: Int32 = -Int32(bitPattern: UInt32(0x41444E49))  // -MKTAG('I','N','D','A')

extension MediaTime {
    /// `ticks` of the time base `tb`. Times from files are kept within ±2^31 s (68 years), so
    /// that a damaged file's timestamps cannot overflow the arithmetic done with them later; a
    /// time base that is not positive counts as 1/1.
    init(ticks: Int64, _ tb: AVRational) {
        let num = tb.num > 0 && tb.den > 0 ? Int64(tb.num) : 1
        let den = tb.num > 0 && tb.den > 0 ? tb.den : 1
        let bound = (Int64(1) << 31) * Int64(den)
        let (value, overflow) = ticks.multipliedReportingOverflow(by: num)
        let clamped = overflow ? (ticks < 0 ? -bound : bound) : min(max(value, -bound), bound)
        self.init(value: clamped, timescale: den)
    }

    /// This time in ticks of `tb`, rounded to the nearest.
    func ticks(in tb: AVRational) -> Int64 {
        av_rescale_q(value, AVRational(num: 1, den: timescale), tb)
    }
}

/// A C string as a Swift string.
func cString(_ pointer: UnsafePointer<CChar>?) -> String {
    guard let pointer else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), as: UTF8.self)
}

/// A NUL-terminated C character buffer as a Swift string.
func cString(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
