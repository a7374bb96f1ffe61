import Foundation
internal import CFFmpeg
import ReelCore

/// One packet of encoded silence that can stand in for any audio packet of a stream: made by
/// an encoder of the same codec, sample rate and channels, whose codec header matches the
/// stream's byte for byte.
final class SilentPacket {
    let packet: Packet
    /// The samples the packet decodes to.
    let sampleCount: Int64

    init(matching stream: StreamFacts) throws {
        guard let codec = stream.audioCodec, stream.frameSize > 0 || codec == .opus else {
            throw Incompatibility("its \(stream.codecLabel) cannot be replaced by silence without re-encoding",
                                  hint: LibraryHint.allowReencoding)
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
                                  hint: LibraryHint.allowReencoding)
        }
        let ctx = encoder.context.pointee
        let header = ctx.extradata_size > 0 ? Array(UnsafeBufferPointer(start: ctx.extradata, count: Int(ctx.extradata_size))) : []
        // Opus headers carry the encoder's delay, which may differ by encoder version: what matters is the codec.
        guard header == stream.extradata || codec == .opus else {
            throw Incompatibility("its \(stream.codecLabel) was made by another encoder, so silence cannot be slipped in without re-encoding",
                                  hint: LibraryHint.allowReencoding)
        }
        // A packet from well after the start, where the encoder has settled on pure silence.
        var packets: [Packet] = []
        let zeros = AudioBuffer.silence(format: format, frameCount: 8 * 1024, at: .zero)
        try encoder.send(zeros)
        while case .packet(let encoded) = try encoder.receive() { packets.append(encoded.storage) }
        guard packets.count >= 4 else {
            throw ReelError(.encodingFailed, "cannot encode silence for \(stream.codecLabel)")
        }
        packet = packets[packets.count - 2]
        sampleCount = packet.pointer.pointee.duration > 0 ? av_rescale_q(packet.pointer.pointee.duration, encoder.timeBase, AVRational(num: 1, den: stream.sampleRate))
                                                : Int64(encoder.context.pointee.frame_size)
    }

    /// A clip's audio bit rate as the encoder takes it: within the codec's range, 160 kb/s if unknown.
    static func bitRate(_ stated: Int64, codec: AudioCodec, channels: Int) -> Int {
        let range = codec.bitRateRange(channels: min(max(channels, 1), 2))
        return stated > 0 ? Int(min(max(stated, Int64(range.lowerBound)), Int64(range.upperBound))) : min(max(160_000, range.lowerBound), range.upperBound)
    }
}
