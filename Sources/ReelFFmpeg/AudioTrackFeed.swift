import Foundation
internal import CFFmpeg
import ReelCore

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
        converter = SoundConverter(sampleRate: format.sampleRate, channels: format.channels)
    }

    /// Sample frames decoded and not yet handed on.
    var pendingFrames: Int { (samples.count - consumed) / format.channels }

    mutating func take(decoder: Decoder) throws {
        var converted = try converter.convert(decoder.frame)
        if !started, let ts = decoder.frameTimestamp {
            started = true
            // A damaged file's time can be anything: one that does not fit in 64 bits (as a
            // difference, or rescaled: libavutil gives Int64.min then) is damage, not a crash.
            let (offset, overflowed) = ts.subtractingReportingOverflow(zero)
            let position = overflowed ? Int64.min : av_rescale_q(offset, decoder.timeBase, AVRational(num: 1, den: Int32(format.sampleRate)))
            guard position > Int64.min else {
                throw ReelError(.invalidMedia, "\(label) is damaged: its audio starts at a time that cannot be", hint: "merge only complete recordings")
            }
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
