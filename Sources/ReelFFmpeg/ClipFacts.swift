import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

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
    /// The file's size in bytes when probed (what a merge's progress counts).
    var fileSize: Int64 = 0
    /// The chapters the file holds.
    var chapterCount = 0

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
        facts.fileSize = Int64(s.st_size)
        // An MP4/MOV header says all that the merge compares; other files have libavformat look
        // into their first packets (which decodes a few frames: a few ms a clip).
        let input = try facts.open(readsStreamInfo: false)
        let ctx = input.context
        facts.chapterCount = Int(ctx.pointee.nb_chapters)
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
        // A sound is sampled at thousands of times a second; a few times a second is damage, and
        // re-encoding it would stretch each of its samples into thousands (a 2 KB file became
        // minutes of audio to convert).
        if let slow = facts.audio.first(where: { $0.sampleRate < StreamFacts.lowestSampleRate }) {
            throw ReelError(.invalidMedia, "\(label) is damaged: its audio is sampled \(slow.sampleRate) times a second",
                            hint: "check that it is a complete recording")
        }
        if facts.streams.filter({ $0.kind == .video }).count > 1 {
            throw ReelError(.unsupportedFormat, "\(label) has more than one video track", hint: "merge clips with one video track")
        }
        guard let video = facts.video else {
            // Sound alone begins at its first sound. A FLAC clip cut from a longer encode (the
            // clips of one recording share its encoder) numbers its frames on from the clip
            // before, and libavformat times it from there.
            if ctx.pointee.start_time != FFmpeg.noPTS, ctx.pointee.start_time > 0 {
                facts.zero = MediaTime(value: ctx.pointee.start_time, timescale: 1_000_000)
            }
            return facts
        }
        while true {
            guard let packet = try input.next(failing: facts.damaged) else {
                throw ReelError(.invalidMedia, "\(label) has no video frames: \(url.path)", hint: "check that it is a complete recording")
            }
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

    /// Whether this clip has a picture and no sound where `first` has both: joined by copying,
    /// its span is filled with silence on `first`'s audio tracks.
    func lacksAudio(of first: ClipFacts) -> Bool {
        audio.isEmpty && !first.audio.isEmpty && video != nil && first.video != nil
    }

    /// Why this clip cannot follow `first` by copying packets, or `nil` if it can.
    func incompatibility(with first: ClipFacts, soundMayBeMissing: Bool = false) -> Incompatibility? {
        func tracks(_ c: ClipFacts) -> String {
            let a = c.audio.count
            let audio = a == 0 ? "no audio" : a == 1 ? "one audio track" : "\(a) audio tracks"
            return (c.video == nil ? "no video and " : "video and ") + audio
        }
        let reencode = LibraryHint.allowReencoding
        // A clip with the picture and no sound where clip 1 has sound (one cut off by a size
        // limit before its first sound was encoded) gets silence; see ``lacksAudio(of:)``.
        let silent = soundMayBeMissing && lacksAudio(of: first)
        if streams.map(\.kind) != first.streams.map(\.kind) && !silent {
            return Incompatibility("\(label) has \(tracks(self)) but clip 1 has \(tracks(first))",
                                   hint: "\(reencode) or merge clips with the same tracks")
        }
        var audioNumber = 0
        let pairs = silent ? [(video!, first.video!)] : Array(zip(streams, first.streams))
        for (mine, theirs) in pairs {
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
