internal import CFFmpeg

extension FFmpeg {
    /// `AVERROR_INVALIDDATA`, a macro Swift cannot import: `-MKTAG('I','N','D','A')`.
    static let invalidData: Int32 = -Int32(bitPattern: UInt32(0x41444E49))
}
