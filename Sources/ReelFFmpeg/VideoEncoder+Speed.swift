internal import CFFmpeg
import ReelCore

/// Changing a running H.264 stream's preset.
///
/// libx264 cannot change the preset of an open encoder (`x264_encoder_reconfig` takes only rate
/// control and a few analysis options, and libavcodec passes on none of those that make it
/// faster). So a faster preset means a new encoder: the old one is flushed, and the new one
/// starts at the next frame with an IDR picture. For one stream to go on, the new encoder's
/// sequence and picture parameter sets (the stream's extradata, MP4's `avcC`) must be the
/// old one's byte for byte: the options that shape them — CABAC, B-frames and their pyramid,
/// reference frames, weighted prediction, the 8x8 transform, the chroma QP offset — are
/// pinned through `x264-params` to the values the first encoder reported in the SEI it puts
/// before its first picture, and the new extradata is compared before anything is switched.
extension VideoEncoder {
    /// The x264 options that shape the SPS and PPS, as x264 names them in its SEI.
    static let headerOptionNames = ["cabac", "ref", "8x8dct", "chroma_qp_offset", "bframes", "b_pyramid", "weightb", "weightp"]

    /// The encoder's header (SPS and PPS for H.264), as the stream's extradata.
    var extradata: [UInt8] {
        guard let bytes = context.pointee.extradata, context.pointee.extradata_size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(context.pointee.extradata_size)))
    }

    /// Whether this encoder's stream can go on through an encoder of another preset: libx264 only.
    var changesPresetInStream: Bool {
        String(cString: context.pointee.codec.pointee.name) == "libx264"
    }

    /// The `x264-params` that pin the header-shaping options to the values in x264's SEI
    /// (`options: cabac=1 ref=1 …`), or `nil` if `packet` has no such SEI.
    static func pinnedHeaderParameters(fromFirstPacket packet: EncodedPacket) -> String? {
        packet.withUnsafeBytes { bytes -> String? in
            let marker = Array("options: ".utf8)
            guard bytes.count > marker.count else { return nil }
            var start: Int?
            for i in 0...(bytes.count - marker.count) where bytes[i] == marker[0] {
                if (0..<marker.count).allSatisfy({ bytes[i + $0] == marker[$0] }) { start = i + marker.count; break }
            }
            guard let start else { return nil }
            var end = start
            while end < bytes.count, bytes[end] != 0, bytes[end] >= 0x20, bytes[end] < 0x7f { end += 1 }
            let text = String(decoding: bytes[start..<end], as: UTF8.self)
            var values: [String: String] = [:]
            for option in text.split(separator: " ") {
                let pair = option.split(separator: "=", maxSplits: 1)
                if pair.count == 2 { values[String(pair[0])] = String(pair[1]) }
            }
            var pinned: [String] = []
            for name in headerOptionNames {
                // Every one of them, or none: a header half pinned is not pinned.
                guard let value = values[name], !value.isEmpty, value.allSatisfy({ $0.isNumber || $0 == "-" }) else { return nil }
                pinned.append("\(name.replacingOccurrences(of: "_", with: "-"))=\(value)")
            }
            return pinned.joined(separator: ":")
        }
    }

    /// A new encoder like this one but at `preset`, its header pinned by `pinned` (see
    /// ``pinnedHeaderParameters(fromFirstPacket:)``), whose packets belong to this one's stream.
    ///
    /// - Throws: `.unsupportedFormat` when the new encoder's header differs from this one's (a
    ///   decoder of the stream would be given pictures its header does not describe); what
    ///   opening an encoder throws.
    func replacement(preset: String, pinned: String) throws -> VideoEncoder {
        var settings = self.settings
        settings.preset = preset
        let next = try VideoEncoder(settings: settings, inputFormat: inputFormat, inputSize: inputSize, globalHeader: true,
                                    streamIndex: try stream.index, x264Parameters: pinned, keepsAspect: placement.size != outputSize)
        guard next.extradata == extradata else {
            throw ReelError(.unsupportedFormat, "libx264 at preset \(preset) makes another stream header (SPS/PPS) than at \(self.settings.effectivePreset)")
        }
        next.openedStream = try stream
        return next
    }
}
