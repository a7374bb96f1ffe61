internal import CFFmpeg
import ReelCore

/// One `AVPacket`: the one owner of a demuxed or encoded packet in ReelFFmpeg, freed (with the
/// data it references) in `deinit`.
///
/// A packet is reused: reading or encoding fills it, ``unref()`` empties it for the next one.
/// It is also the storage of an ``EncodedPacket``: there it holds one reference to the encoded
/// data and is never changed again, and writers take references of their own from it.
final class Packet {
    /// The packet, valid for the owner's lifetime. Never freed by anyone else.
    let pointer: UnsafeMutablePointer<AVPacket>

    /// An empty packet.
    ///
    /// - Throws: `.encodingFailed` when libavcodec cannot allocate one.
    init() throws {
        guard let packet = av_packet_alloc() else {
            throw ReelError(.encodingFailed, "cannot allocate a packet", hint: "the system is out of memory")
        }
        pointer = packet
    }

    /// A new reference to the data of `other` (no copy when it is reference-counted), with its
    /// times and flags.
    ///
    /// - Throws: `.encodingFailed` when libavcodec cannot allocate one.
    init(referencing other: UnsafePointer<AVPacket>) throws {
        guard let packet = av_packet_clone(other) else {
            throw ReelError(.encodingFailed, "cannot copy a packet", hint: "the system is out of memory")
        }
        pointer = packet
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&p)
    }

    /// Drops the data the packet references and resets its fields, ready to be filled again.
    func unref() { av_packet_unref(pointer) }

    /// The bytes of encoded data.
    var size: Int { Int(pointer.pointee.size) }

    /// Whether the packet starts a group that decodes on its own.
    var isKeyframe: Bool { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
}
