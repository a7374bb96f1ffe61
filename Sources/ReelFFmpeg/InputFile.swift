import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// One opened input file or network stream: an `AVFormatContext` from `avformat_open_input`.
///
/// It is the one place packets are read (``next(failing:)``): the joiners, the remuxer,
/// recovery, the counts and checks of files, and file and network cameras all read through it.
final class InputFile {
    let context: UnsafeMutablePointer<AVFormatContext>
    /// The packet read last: ``next(failing:)`` hands it out until the next read.
    private let current: Packet
    let url: URL
    /// What libavformat asks whether to give up a blocking read; retained while `context` lives
    /// (the protocol layers keep their own copy of the callback, so it cannot be swapped later).
    let gate: InterruptGate?
    /// The I/O of a ``FileView``, if the file is read through one; outlives the demuxer.
    private let viewInput: FileViewInput?

    /// Opens `url`. `readsStreamInfo` lets libavformat look into the first packets for what
    /// the header does not say (frame rate, reorder delay); a file whose facts are known
    /// already opens faster without.
    ///
    /// For network streams: `format` forces a demuxer (`"mpjpeg"`), `options` are protocol and
    /// demuxer options (`rtsp_transport`, `timeout`), and `gate` lets the owner abandon a
    /// connect or read that blocks (a deadline, a stop).
    ///
    /// `view` reads a local file as the ``FileView`` shows it (the complete part of a
    /// recording whose end was cut short, a torn fragment made whole).
    init(url: URL, readsStreamInfo: Bool = true, format: String? = nil, options: [String: String] = [:],
         gate: InterruptGate? = nil, view: FileView? = nil) throws {
        current = try Packet()
        let location = url.isFileURL ? url.path : url.absoluteString
        if url.isFileURL && format == nil {
            try FragmentedTrackCheck.check(url, byteLimit: view?.length)
        }
        var viewInput: FileViewInput?
        if let view, url.isFileURL {
            guard view.length > 0 else { throw ReelError(.invalidMedia, "\(location) holds nothing to read") }
            viewInput = try FileViewInput(url: url, view: view)
        }
        var ctx: UnsafeMutablePointer<AVFormatContext>? = avformat_alloc_context()
        guard ctx != nil else {
            throw ReelError(.encodingFailed, "cannot allocate a demuxer for \(location)")
        }
        if let gate { ctx!.pointee.interrupt_callback = gate.callback }
        if let viewInput {
            // Read through our own I/O: avformat_close_input leaves it to us.
            ctx!.pointee.pb = viewInput.context
            ctx!.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        }
        var dictionary: OpaquePointer? = nil
        defer { av_dict_free(&dictionary) }
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        let inputFormat = format.flatMap { av_find_input_format($0) }
        // On failure avformat_open_input frees the context.
        let r = avformat_open_input(&ctx, location, inputFormat, &dictionary)
        if r < 0 {
            let denied = r == reel_averror(EACCES) || r == reel_averror(EPERM)
            throw FFmpeg.error(r, "cannot read \(location)", code: r == reel_averror(ENOENT) ? .ioFailure : .invalidMedia,
                               hint: denied ? "check the file's permissions" : nil)
        }
        self.context = ctx!
        self.url = url
        self.gate = gate
        self.viewInput = viewInput
        let info = readsStreamInfo ? avformat_find_stream_info(ctx, nil) : 0
        if info < 0 {
            // Fully initialised: deinit closes the input (closing it here too would free it twice).
            throw FFmpeg.error(info, "cannot read the streams of \(location)", code: .invalidMedia)
        }
    }

    /// Reads the next packet; `nil` at the end of the input. The packet returned belongs to the
    /// input and stays valid until the next read (a muxer may take its data meanwhile).
    ///
    /// - Throws: what `failing` makes of any other result of the read (a damaged file, an
    ///   error of the network; `EAGAIN` too: see ``read()`` for a reader that waits and retries).
    func next(failing: (Int32) -> any Error) throws -> UnsafeMutablePointer<AVPacket>? {
        let (result, packet) = read()
        if result == FFmpeg.eof { return nil }
        if result < 0 { throw failing(result) }
        return packet
    }

    /// Reads the next packet, as ``next(failing:)``; `nil` at the end and at the first part that
    /// cannot be read (a file cut short: what was read before stays good).
    func nextReadable() -> UnsafeMutablePointer<AVPacket>? {
        let (result, packet) = read()
        return result >= 0 ? packet : nil
    }

    /// Reads the next packet: libavformat's result (0, or an `AVERROR`), and the packet, valid
    /// when the result is 0 until the next read.
    func read() -> (result: Int32, packet: UnsafeMutablePointer<AVPacket>) {
        let packet = current.pointer
        av_packet_unref(packet)
        return (av_read_frame(context, packet), packet)
    }

    deinit {
        var c: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&c)
        withExtendedLifetime(viewInput) {}
    }
}
