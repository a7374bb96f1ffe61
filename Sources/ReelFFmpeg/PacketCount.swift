import Foundation
internal import CFFmpeg
import ReelCore

/// What a media file holds, counted packet by packet as it is on disk (nothing is decoded): to
/// check a file made from others (merged clips) before those are removed.
package struct PacketCount: Sendable, Hashable {
    /// Packets of the first video stream (one a frame).
    package var videoPackets: Int64
    /// Packets of every audio stream.
    package var audioPackets: Int64
    /// The seconds of sound of the longest audio stream: the sum of its packets' durations (the
    /// measure of a file without video, where no frame count can say that something was lost).
    package var audioSeconds: Double = 0
    /// Where the first video stream's media ends, and the longest audio stream's, in seconds
    /// of their timestamps: the latest packet's time and duration (or, a packet without a
    /// duration, as an MKV's sound has, the step from the packet before it in its stream).
    package var videoEnd: Double = 0
    package var audioEnd: Double = 0

    /// Reads every packet of the regular file at `url`.
    package static func count(_ url: URL) throws -> PacketCount {
        FFmpeg.silenceLibraryLogging()
        try Recovery.checkReadableFile(url)
        let input = try InputFile(url: url, readsStreamInfo: false)
        let ctx = input.context
        let video = Int(av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0))
        var isAudio: [Bool] = []
        var timeBases: [AVRational] = []
        for i in 0..<Int(ctx.pointee.nb_streams) {
            isAudio.append(ctx.pointee.streams[i]!.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO)
            timeBases.append(ctx.pointee.streams[i]!.pointee.time_base)
        }
        var audioTicks = [Int64](repeating: 0, count: isAudio.count)
        var ends = [Int64](repeating: 0, count: isAudio.count), lastTimes = [Int64?](repeating: nil, count: isAudio.count)
        var count = PacketCount(videoPackets: 0, audioPackets: 0)
        while true {
            guard let packet = try input.next(failing: { FFmpeg.error($0, "cannot read \(url.lastPathComponent)", code: .invalidMedia) }) else { break }
            let stream = Int(packet.pointee.stream_index)
            if ends.indices.contains(stream), packet.pointee.pts != FFmpeg.noPTS {
                let pts = packet.pointee.pts
                let step = packet.pointee.duration > 0 ? packet.pointee.duration : lastTimes[stream].map { max(0, pts - $0) } ?? 0
                ends[stream] = max(ends[stream], pts + step)
                lastTimes[stream] = pts
            }
            if stream == video {
                count.videoPackets += 1
            } else if isAudio.indices.contains(stream), isAudio[stream] {
                count.audioPackets += 1
                audioTicks[stream] += max(0, packet.pointee.duration)
            }
        }
        count.audioSeconds = audioTicks.indices.map { i in
            timeBases[i].den > 0 ? Double(audioTicks[i]) * Double(timeBases[i].num) / Double(timeBases[i].den) : 0
        }.max() ?? 0
        func seconds(_ i: Int) -> Double {
            timeBases[i].den > 0 ? Double(ends[i]) * Double(timeBases[i].num) / Double(timeBases[i].den) : 0
        }
        if ends.indices.contains(video) { count.videoEnd = seconds(video) }
        count.audioEnd = isAudio.indices.filter { isAudio[$0] }.map(seconds).max() ?? 0
        return count
    }

    /// Whether a file merged from clips holding `clipSeconds` of sound in all (in `clips`
    /// clips) holds all of it: short by at most one audio frame (a tenth of a second covers
    /// FLAC's longest) a clip, where the joins round.
    package func holdsAudio(of clipSeconds: Double, clips: Int) -> Bool {
        audioSeconds >= clipSeconds - 0.1 * Double(max(1, clips))
    }
}
