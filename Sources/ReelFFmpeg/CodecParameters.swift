internal import CFFmpeg
import ReelCore

/// One `AVCodecParameters`: the codec, its header (extradata) and the picture or sound format
/// of one stream, copied from an opened encoder or a demuxed stream and never changed after.
///
/// The one owner of its parameters; frees them in `deinit`. Immutable after creation, so it is
/// shared between threads (a replay buffer saving while the encoder runs).
final class CodecParameters: @unchecked Sendable {
    /// The parameters, valid for the owner's lifetime; only read.
    let pointer: UnsafeMutablePointer<AVCodecParameters>

    private init(allocating what: String) throws {
        guard let p = avcodec_parameters_alloc() else {
            throw ReelError(.encodingFailed, "cannot allocate the codec parameters of \(what)", hint: "the system is out of memory")
        }
        pointer = p
    }

    /// The parameters of the opened encoder `context`.
    convenience init(encoder context: UnsafePointer<AVCodecContext>) throws {
        try self.init(allocating: "an encoder")
        try FFmpeg.check(avcodec_parameters_from_context(pointer, context), "cannot copy an encoder's codec parameters")
    }

    /// A copy of `parameters` (a demuxed stream's).
    convenience init(copying parameters: UnsafePointer<AVCodecParameters>) throws {
        try self.init(allocating: "a stream")
        try FFmpeg.check(avcodec_parameters_copy(pointer, parameters), "cannot copy a stream's codec parameters")
    }

    deinit {
        var p: UnsafeMutablePointer<AVCodecParameters>? = pointer
        avcodec_parameters_free(&p)
    }

    /// The codec's short name (`h264`, `aac`).
    var codecName: String { cString(avcodec_get_name(pointer.pointee.codec_id)) }
}
