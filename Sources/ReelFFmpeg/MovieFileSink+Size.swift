import Foundation
import ReelCore

/// What a movie file will come to: the estimates the size limit and the free-space guard use,
/// and the index reservation.
extension MovieFileSink {
    /// An estimate of the finished file's size: what is written, the packets held back for the
    /// limit, `framesInEncoder` more frames each as big as the latest frames between
    /// keyframes, and the audio packets still to come. The limit itself is kept exactly as
    /// packets come out.
    package func projectedFileSize(framesInEncoder: Int) -> Int64 {
        let encoding = Int64(framesInEncoder), heldBytes = heldPackets.reduce(Int64(0)) { $0 + Int64($1.byteCount) }
        let audioPackets = Int64(audioStreams.count * Self.audioPacketsToCome)
        return projectedFileSize(adding: heldBytes + encoding * typicalFrameBytes * 3 / 2 + audioPackets * Int64(largestAudioPacket),
                                 packets: encoding + Int64(heldPackets.count) + audioPackets)
    }

    /// What is still to reach the disk of the file as ``projectedFileSize(framesInEncoder:)``
    /// estimates it: the fragment being filled, the frames in the encoder, the index to come.
    /// A free-space check counts it as used already.
    package func bytesToCome(framesInEncoder: Int) -> Int64 {
        max(0, projectedFileSize(framesInEncoder: framesInEncoder) - muxer.bytesOnDisk)
    }

    /// The latest video packets' average size, keyframes left out (0 until one has come out).
    package var typicalFrameBytes: Int64 {
        recentVideoSizes.isEmpty ? 0 : Int64(recentVideoSizes.reduce(0, +) / recentVideoSizes.count)
    }

    /// An upper bound of the size the file will have when finished, if `bytes` more in
    /// `packets` more packets are written: the media, the container's boxes for each packet
    /// and, for MP4/MOV, the index of a file finalised by copying (at most 48 bytes a packet).
    func projectedFileSize(adding bytes: Int64, packets: Int64) -> Int64 {
        let payload = muxer.payloadBytes + bytes, count = muxer.packetCount + packets
        let perPacket: Int64 = configuration.container.isISOBaseMedia ? 48 : 32
        return muxer.headerSize + payload + perPacket * count + 4096
    }

    /// The space to keep for the final index of a recording of the expected duration.
    func indexReservationEstimate(headerSize: Int) -> Int {
        guard let estimate = indexEstimate(headerSize: headerSize) else { return 0 }
        return Int(estimate.bytes(for: configuration.expectedDuration ?? MediaTime(value: 3600, timescale: 1)))
    }

    /// What the index of a recording of some duration is estimated from (`nil` for a file
    /// that is not fragmented).
    func indexEstimate(headerSize: Int) -> SpareIndexRoom.Estimate? {
        guard let interval = configuration.fragmentInterval else { return nil }
        let keyframes = configuration.video.map { Double($0.settings.effectiveKeyframeInterval) / $0.settings.frameRate.framesPerSecond }
        return SpareIndexRoom.Estimate(frameRate: configuration.video?.settings.frameRate, audioPacketRates: audioPacketRates,
                                       fragmentInterval: interval, keyframeInterval: keyframes, headerSize: headerSize)
    }
}

extension MovieFileSink {
    /// Bytes written so far (some may still wait for the disk).
    package var bytesWritten: Int64 { muxer.bytesWritten }
    /// The queue of bytes waiting for the disk, if the file is written by a thread of its own.
    package var writeQueue: FileWriteQueue? { muxer.writeQueue }
    /// The packets written so far.
    package var packetsWritten: Int64 { muxer.packetCount }
    /// The bytes of encoded video and audio written so far.
    package var mediaBytes: Int64 { muxer.payloadBytes }

    /// Whether the disk filled while the file was written and had back the room of the index
    /// reservation that the index will not need (the writer went on into it): everything taken
    /// so far reaches the disk, but the recording is to end (see ``SpareIndexRoom``).
    package var diskFilled: Bool { writeQueue?.roomGivenBack != nil }
}
