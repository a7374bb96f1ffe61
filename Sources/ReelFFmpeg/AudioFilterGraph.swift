import Foundation
import ReelCore

/// The audio filters of one input, set up for its format: sound in, the filtered sound out in
/// the same format, each sample at the time of the sample it came from. A filter that delays
/// its sound (`alimiter` looks ahead by its attack, `afftdn` and `afftfilt` by their windows)
/// is compensated: its delay, measured once per graph and format (``AudioFilterDelay``), is
/// taken off the times, the sound it makes before the first sample is dropped, and at the end
/// silence pushes out what it holds, so that as many samples come out as went in, on time.
/// Used from one thread (the source's).
package final class AudioFilterGraph {
    package let format: AudioFormat
    /// How many samples the graph delays its sound (0 when it does not, or when it could not
    /// be told).
    package let delay: Int
    private let chain: AudioFilterChain
    /// The time of sample zero of the graph's timeline (the first sound given).
    private var origin: MediaTime?
    /// Just after the last sample given, in samples from `origin`.
    private var end: Int64 = 0

    /// The graph of `filters` in order, for sound of `format`.
    ///
    /// - Throws: `.invalidConfiguration` naming the graph libavfilter refused.
    package init(filters: [AudioFilter], format: AudioFormat) throws {
        let text = Self.text(of: filters)
        chain = try AudioFilterChain(text: text, format: format)
        self.format = format
        delay = AudioFilterDelay.frames(of: text, format: format)
    }

    /// Measures how much the graph of `filters` delays sound of `format`, if that is not known
    /// yet: the graph made later for it does not wait for the measurement.
    package static func measureDelay(of filters: [AudioFilter], format: AudioFormat) {
        guard !filters.isEmpty else { return }
        _ = AudioFilterDelay.frames(of: text(of: filters), format: format)
    }

    private static func text(of filters: [AudioFilter]) -> String { filters.map(\.graph).joined(separator: ",") }

    /// Filters `buffer` (of the graph's format); returns the sound the graph gave out so far,
    /// timed on the session's timeline. A filter that holds sound back (to look ahead) gives
    /// it in a later call.
    package func process(_ buffer: AudioBuffer) throws -> [AudioBuffer] {
        guard buffer.format == format else {
            throw ReelError(.invalidConfiguration, "audio of \(buffer.format) reached a filter set up for \(format)")
        }
        let origin = self.origin ?? buffer.presentationTime
        self.origin = origin
        let position = (buffer.presentationTime - origin).convertedValue(to: Int32(format.sampleRate))
        try chain.push(buffer.data, at: position)
        end = max(end, position + Int64(buffer.frameCount))
        return try timed(chain.pull(), origin: origin, until: nil)
    }

    /// Gives the end of the sound to the graph and returns everything it still held (a
    /// filter that looks ahead, such as `loudnorm`, holds seconds; one that delays its sound
    /// holds its delay), timed on the session's timeline, up to the end of the sound given.
    /// The graph is spent afterwards: sound given to it later is an error, so its owner makes
    /// a new one.
    package func drain() throws -> [AudioBuffer] {
        guard let origin else { return [] }
        if delay > 0 {
            // Silence for the delay and a little more (filters that work in blocks give whole
            // blocks) brings out the last of the sound; what comes after it is cut.
            let frames = delay + format.sampleRate / 50
            try chain.push([UInt8](repeating: 0, count: frames * format.bytesPerFrame), at: end)
        }
        try chain.end()
        return try timed(chain.pull(limit: Int(end) + 2 * delay + format.sampleRate * 10), origin: origin, until: end)
    }

    /// `pieces` moved earlier by the delay, without what falls before sample zero or, when
    /// `until` is given, from it on.
    private func timed(_ pieces: [AudioFilterChain.Piece], origin: MediaTime, until: Int64?) -> [AudioBuffer] {
        pieces.compactMap { piece in
            let buffer = AudioBuffer(format: format, presentationTime: origin, wholeFrames: piece.bytes)
            let start = piece.position - Int64(delay)
            let from = Int(max(0, -start))
            let to = until.map { Int(max(0, min(Int64(buffer.frameCount), $0 - start))) } ?? buffer.frameCount
            guard from < to else { return nil }
            var kept = from == 0 && to == buffer.frameCount ? buffer : buffer.slice(frames: from..<to)
            kept.presentationTime = origin + MediaTime(value: start + Int64(from), timescale: Int32(format.sampleRate))
            return kept
        }
    }
}
