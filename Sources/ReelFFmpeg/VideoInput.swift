import Foundation
internal import CFFmpeg
import ReelCore

/// The best video stream of one input (a file or a network stream) and its decoder: reads
/// packets and hands back decoded pictures, one at a time.
///
/// Owns no C resource itself: it retains the ``InputFile`` (the demuxer) and the ``Decoder``.
/// Damaged data is skipped as long as pictures keep coming; every loop that makes no progress is
/// bounded, so a hostile input ends in an error rather than a hang.
///
/// Used by one thread at a time; it may be handed from one thread to another (a camera opens it
/// in `prepare()` and its capture thread reads it), hence `@unchecked Sendable`.
final class VideoInput: @unchecked Sendable {
    /// What ``next()`` found.
    enum Next {
        /// A decoded picture is in ``picture`` until the next call.
        case picture
        /// The input has no more pictures.
        case endOfStream
    }

    /// The largest width or height accepted (larger streams are hostile or not a camera).
    static let maximumDimension = 16_384
    /// Damaged packets in a row after which the stream counts as undecodable.
    static let maximumDamagedInRow = 200
    /// Reads in a row that asked to try again after which the input counts as stuck.
    static let maximumRetriesInRow = 2_000

    let input: InputFile
    let decoder: Decoder
    /// The index of the video stream in the input.
    let streamIndex: Int
    /// The picture size the stream declares.
    let size: PixelSize
    /// The stream's nominal frame rate, if it states a plausible one (or libavformat guessed one).
    let nominalFrameRate: FrameRate?
    /// The stream's average frame rate, if the container or the stream's timing states one
    /// (not libavformat's guess of 25 for streams that carry no timing, like HTTP MJPEG).
    let averageFrameRate: FrameRate?
    /// The codec's name ("h264", "mjpeg").
    let codecName: String
    /// Packets that did not decode and were skipped.
    private(set) var damagedPackets = 0

    private var draining = false
    private var description: String { input.url.isFileURL ? input.url.path : input.url.absoluteString }

    /// Picks the best video stream of `input` and opens its decoder.
    init(input: InputFile) throws {
        self.input = input
        let location = input.url.isFileURL ? input.url.path : input.url.absoluteString
        let index = av_find_best_stream(input.context, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard index >= 0 else {
            throw ReelError(.invalidMedia, "\(location) has no video stream", hint: "use a video file or a camera stream")
        }
        let stream = input.context.pointee.streams[Int(index)]!
        let par = stream.pointee.codecpar!
        codecName = String(cString: avcodec_get_name(par.pointee.codec_id))
        let width = Int(par.pointee.width), height = Int(par.pointee.height)
        guard width > 0, height > 0 else {
            throw ReelError(.invalidMedia, "the \(codecName) video of \(location) has no picture size",
                            hint: "the stream may be damaged or not yet started")
        }
        guard width <= Self.maximumDimension, height <= Self.maximumDimension else {
            throw ReelError(.unsupportedFormat, "the \(codecName) video of \(location) is \(width)x\(height), larger than \(Self.maximumDimension) pixels a side")
        }
        streamIndex = Int(index)
        size = PixelSize(width: width, height: height)
        averageFrameRate = Self.plausibleRate(stream.pointee.avg_frame_rate)
        nominalFrameRate = averageFrameRate ?? Self.plausibleRate(stream.pointee.r_frame_rate)
        decoder = try Decoder(input: input, stream: Int(index))
        // A damaged or crafted picture must not make the decoder allocate without bound.
        decoder.context.pointee.max_pixels = Int64(Self.maximumDimension) * Int64(Self.maximumDimension) / 4
    }

    /// The decoded picture after ``next()`` returned ``Next/picture``.
    var picture: UnsafeMutablePointer<AVFrame> { decoder.frame }

    /// The picture's presentation time, counted from `origin` (a timestamp in the stream's time
    /// base), or `nil` when it has none or it is absurd.
    func pictureTime(since origin: Int64?) -> MediaTime? {
        guard let ts = decoder.frameTimestamp else { return nil }
        let base = decoder.timeBase
        guard base.num > 0, base.den > 0 else { return nil }
        let (delta, overflow) = ts.subtractingReportingOverflow(origin ?? 0)
        guard !overflow else { return nil }
        // Exact in the stream's time base when it fits, so that times add up without drift.
        let (ticks, tooBig) = delta.multipliedReportingOverflow(by: Int64(base.num))
        if !tooBig, abs(ticks) < Int64(1) << 52 {
            let time = MediaTime(value: ticks, timescale: base.den)
            if abs(time.seconds) < 1e8 { return time }
            return nil
        }
        let ns = Double(delta) * Double(base.num) / Double(base.den) * 1e9
        guard ns.isFinite, abs(ns) < 1e17 else { return nil }
        return MediaTime(nanoseconds: Int64(ns))
    }

    /// The raw timestamp of the current picture, in the stream's time base.
    var pictureTimestamp: Int64? { decoder.frameTimestamp }

    /// Decodes the next picture.
    ///
    /// - Throws: `.sourceUnavailable` (network) or `.invalidMedia` (file) when reading fails,
    ///   `.invalidMedia` when the stream stops decoding; the caller decides what a failure means.
    func next() throws -> Next {
        var damagedInRow = 0
        var retriesInRow = 0
        while true {
            let received: Decoder.Output
            do {
                received = try decoder.receive()
            } catch {
                damagedPackets += 1
                damagedInRow += 1
                if damagedInRow > Self.maximumDamagedInRow { throw undecodable(error) }
                continue
            }
            switch received {
            case .frame:
                return .picture
            case .endOfStream:
                return .endOfStream
            case .needsInput:
                if draining { return .endOfStream }
            }
            let (r, packet) = input.read()
            if r == FFmpeg.eof {
                draining = true
                try? decoder.send(nil)
                continue
            }
            if r == FFmpeg.eagain {
                retriesInRow += 1
                if retriesInRow > Self.maximumRetriesInRow {
                    throw ReelError(.sourceUnavailable, "\(description) keeps asking to try again and delivers nothing")
                }
                usleep(1_000)
                continue
            }
            if r < 0 {
                let network = !input.url.isFileURL
                throw FFmpeg.error(r, "cannot read \(description)", code: network ? .sourceUnavailable : .invalidMedia)
            }
            retriesInRow = 0
            guard Int(packet.pointee.stream_index) == streamIndex else { continue }
            do {
                try decoder.send(packet)
            } catch {
                damagedPackets += 1
                damagedInRow += 1
                if damagedInRow > Self.maximumDamagedInRow { throw undecodable(error) }
            }
        }
    }

    /// Goes back to the start (for looping): seeks, or returns `false` if the input cannot seek.
    func rewind() -> Bool {
        let ctx = input.context
        let start = ctx.pointee.start_time != FFmpeg.noPTS ? ctx.pointee.start_time : 0
        guard avformat_seek_file(ctx, -1, Int64.min, start, start, 0) >= 0 else { return false }
        avcodec_flush_buffers(decoder.context)
        draining = false
        return true
    }

    private func undecodable(_ error: Error) -> ReelError {
        let detail = (error as? ReelError)?.message ?? "\(error)"
        return ReelError(.invalidMedia, "the \(codecName) video of \(description) does not decode (\(detail))",
                         hint: "the stream is damaged or not what it claims to be")
    }

    /// `rate` as a frame rate if it is a plausible one for video (1 to 240 frames per second).
    static func plausibleRate(_ rate: AVRational) -> FrameRate? {
        guard rate.num > 0, rate.den > 0 else { return nil }
        let fps = Double(rate.num) / Double(rate.den)
        guard fps >= 1, fps <= 240 else { return nil }
        return FrameRate(rate.num, per: rate.den)
    }
}
