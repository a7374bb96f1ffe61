import Foundation
internal import CFFmpeg
import ReelCore

/// One clip's packets as a joiner reads them, the same for joining by copying and by
/// re-encoding: through the clip's ``InputFile`` (the one read), only those of the clip's
/// streams, each with its place in ``ClipFacts/streams``; a packet marked corrupt is damage;
/// how far reading has come is told to a meter; and a file that ends with fewer packets than
/// its index says is cut short — unless all its bytes are there: then its index lists packets
/// that the file does not play (past its end), which are left out (``leftOut``).
struct ClipReader {
    let clip: ClipFacts
    let input: InputFile
    /// For each stream of the file, its place in `clip.streams` (-1: not the clip's).
    private let position: [Int]
    /// The packets read of each of `clip.streams`.
    private var read: [Int64]
    private let meter: ProgressMeter?
    /// The packets its index lists that the file, whole on the disk, does not play, once read
    /// to its end (`nil` when it plays all). An earlier recovery's copy listed a clip's last
    /// sound packet with no length, past the end of its presentation (libavformat leaves such
    /// a packet out): the clip is merged with every packet it plays, and the merge says so.
    private(set) var leftOut: MergeSummary.PacketsLeftOut?
    /// The bytes of the clips read before this one, which `meter` counts too.
    private let readBefore: Int64

    init(_ clip: ClipFacts, from input: InputFile, meter: ProgressMeter?, readBefore: Int64) {
        self.clip = clip
        self.input = input
        var position = [Int](repeating: -1, count: Int(input.context.pointee.nb_streams))
        for (i, s) in clip.streams.enumerated() { position[s.index] = i }
        self.position = position
        read = Array(repeating: 0, count: clip.streams.count)
        self.meter = meter
        self.readBefore = readBefore
    }

    /// The next packet of the clip's streams, with its stream's place in `clip.streams`; `nil`
    /// at the end of the file, once every stream was found to hold what the index says. The
    /// packet belongs to the input, valid until the next read.
    mutating func next() throws -> (packet: UnsafeMutablePointer<AVPacket>, stream: Int)? {
        while let packet = try input.next(failing: clip.damaged) {
            let index = Int(packet.pointee.stream_index)
            guard index < position.count, position[index] >= 0 else { continue }
            let j = position[index]
            read[j] += 1
            if packet.pointee.flags & AV_PKT_FLAG_CORRUPT != 0 { throw clip.damaged(FFmpeg.invalidData) }
            if let meter, packet.pointee.pos >= 0 { meter.update(completed: readBefore + packet.pointee.pos) }
            return (packet, j)
        }
        // A file cut short may end without an error: it then holds fewer packets than its index
        // says. One whose bytes are all there (its boxes end within it) plays fewer than it lists.
        let short = clip.streams.indices.filter { clip.streams[$0].packetCount > 0 && read[$0] < clip.streams[$0].packetCount }
        guard let j = short.first, leftOut == nil else { return nil }
        if (try? RecordingStructure.inspect(clip.url)) == .complete {
            var left = MergeSummary.PacketsLeftOut(clip: clip.number - 1, file: clip.url.lastPathComponent)
            for i in short {
                let missing = clip.streams[i].packetCount - read[i]
                if clip.streams[i].kind == .video { left.videoPackets += missing } else { left.audioPackets += missing }
            }
            leftOut = left
            return nil
        }
        let facts = clip.streams[j]
        throw ReelError(.invalidMedia, "\(clip.label) is cut short: \(clip.url.path) holds \(read[j]) of its \(facts.packetCount) \(facts.kind == .video ? "video" : "audio") packets",
                        hint: "merge only complete recordings")
    }
}
