import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// A recording's file as one sink among the encoder's: the muxer, the file's place (a file it
/// replaces, a file moved or deleted while recorded: `MovieFileSink+Placement.swift`), its
/// size limit and its finalising.
///
/// MP4 and MOV files are written fragmented while recording, so a file cut off by a crash plays
/// up to its last fragment, and finalised at ``finish()`` into a regular file with its index at
/// the front: in place where space was reserved for the index, else by copying. MKV files are
/// written as they are. Under a size limit video packets wait until their group is complete
/// (``EncodedPacket/completesGroup``) and are written, or refused, whole: a refusal answers
/// ``SinkFlow/full``, and the sink takes nothing more.
///
/// The bytes are written by a thread of the muxer's own from a queue bounded by the
/// configuration's `writeBufferSize`. Used from the encoder's thread, one call at a time.
package final class MovieFileSink: PacketSink {
    /// What the file holds once finished (``finish()``).
    package struct Finished: Sendable {
        /// Where the file is (moved while recorded, it was finalised where it went).
        package var url: URL
        /// How it was finalised.
        package var finalisation: AssetWriter.Finalisation
        /// Its size.
        package var bytes: Int64
        /// The video frames in it, and the grid slot after its last frame (0 without one).
        package var videoFrames: Int64
        package var videoEnd: Int64
        /// Where each audio track's written audio ends, in samples of its real audio.
        package var audioEnds: [Int64]
        /// The bytes of encoded media in it, and its packets.
        package var mediaBytes: Int64
        package var packets: Int64
    }

    /// Where the sink is in its life.
    private enum Phase { case writing, full, finished, abandoned }

    /// Its room (`maximumFileSize`) may change before the first packet (a clip's file made
    /// ahead, see ``ClipFileSink``).
    var configuration: AssetWriter.Configuration
    /// Where the file is in its life: under a name of its own beside a file it replaces until
    /// it holds something, at its name, moved or deleted by someone, finalised
    /// (`MovieFileSink+Placement.swift` acts on it).
    var placement: RecordingPlacement
    /// Where the file is being written: the configured URL, or, while replacing a file that
    /// exists, a name of its own beside it until its first part is on the disk.
    package var url: URL { placement.url }
    /// What became of the file while recorded, if someone moved or deleted it.
    package var relocation: FileRelocation? { placement.relocation }
    /// Where the media begins in the file (after the header and the index reservation): a file
    /// larger than this holds a complete fragment (MKV: cluster), which plays.
    var mediaStart: Int64 = 0
    /// The bytes the file keeps at its start for its final index (MP4/MOV), part of
    /// ``bytesOnDisk`` from the start: the recording's own, which a minimum of free space does
    /// not count as used (the media never fills it).
    package private(set) var indexReservation: Int64 = 0
    /// Where the first media handed to the file ends, once there is some: when that many bytes
    /// are on the disk, the file plays.
    var firstMediaEnd: Int64?
    let muxer: Muxer
    /// Marks the file as a recording in progress from its creation until it is finalised.
    let lock: RecordingLock?
    /// The gate of this file's finalise (see ``FinaliseGate``), for an abort of the recording.
    package var finaliseGate: FinaliseGate? { lock?.finaliseGate }
    /// The part of the index reservation that the disk may have back when it fills (see
    /// ``SpareIndexRoom``): told what the file takes, asked by the writer thread.
    let spareRoom = SpareIndexRoom()
    /// A fault injected into finalising in place (tests); `nil` in production.
    var finaliseFault: MP4Finaliser.Fault?
    /// Runs once the file has been looked for, right before it is finalised (tests: to move it
    /// then); `nil` in production.
    var beforeFinalising: (() -> Void)?
    /// Runs once a compact copy of the file is complete, right before it takes the file's place
    /// (tests: to move the file then); `nil` in production.
    var beforePlacingACopy: (() -> Void)?
    /// Where the recording is copied if it was deleted and its folder takes nothing more (see
    /// ``defaultRescueFolders``; tests set their own).
    var rescueFolders = MovieFileSink.defaultRescueFolders

    private var phase = Phase.writing
    /// Whether one of the file's own steps failed (a write, a flush, its finishing): a failure
    /// of the recording that is not the file's is another sink's.
    private(set) var failedItself = false
    /// Whether the file reached its size limit (and took nothing more from then on), whatever
    /// its phase now.
    package private(set) var isFull = false
    private var videoStream: Int?
    /// The streams of the audio tracks, in order, and the samples each encoder put before its
    /// first real one (what the packets' times leave out).
    var audioStreams: [ObjectIdentifier: (stream: Int, track: Int, priming: Int64)] = [:]
    var audioPacketRates: [Double] = []
    private var streamIndices: [ObjectIdentifier: Int] = [:]
    /// Video packets that came out but wait (under a size limit) until their group is complete.
    var heldPackets: [EncodedPacket] = []
    /// The bytes of the latest video packets between keyframes (for what the encoder still
    /// holds). Keyframes are left out: a detailed 1080p screen's is over a megabyte, and taken
    /// as the size of every frame held in the encoder it stopped a 3 MB recording at its first
    /// frame; a keyframe that does not fit is refused exactly, when it comes out.
    var recentVideoSizes: [Int] = []
    /// The largest audio packet so far: the sound still to come at a stop is counted at it.
    var largestAudioPacket = 0
    /// Audio packets of each track that may still come once a stop is decided: what the AAC
    /// encoder holds (its delay of a frame and the part of one it is filling) and the sound
    /// up to the last picture. Left out, they did not fit under a tight size limit, and the
    /// sound ended 50 ms before the pictures.
    static let audioPacketsToCome = 4
    /// Video frames written so far.
    package private(set) var videoFramesMuxed: Int64 = 0
    private var lastMuxedIndex: Int64 = -1
    /// The end of the audio written to each track, in samples of its real audio.
    private(set) var audioMuxedEnd: [Int64] = []
    /// The grid slot after the last video frame written (0 before one): with ``audioMuxedEnd``,
    /// what the file would hold if all reached the disk.
    var videoEndIndex: Int64 { lastMuxedIndex + 1 }
    /// What the finished file holds.
    package private(set) var finished: Finished?

    /// What the file kept when its disk filled and its last part could not be written: it was
    /// finalised in place with what reached the disk, and plays (see
    /// ``advisingRecoveryWhenFull(stopping:encoder:_:)``).
    package struct KeptByFullDisk: Sendable {
        /// Where the file is.
        package var url: URL
        /// How long what it holds lasts.
        package var duration: MediaTime
        /// The video frames in it.
        package var videoFrames: Int64
        /// Its size.
        package var bytes: Int64
        /// What was recorded and could not be written (`.insufficientStorage`, saying what it
        /// keeps and what it lost); `nil` when all reached the disk.
        package var lost: ReelError?
    }

    /// Set when the disk filled and the file was finalised in place with what reached it (the
    /// error thrown then says so too): a recorder ends the recording as one the disk stopped,
    /// with the file, not as a failure. `nil` otherwise.
    package internal(set) var keptByFullDisk: KeptByFullDisk?
    /// The chapters the file gets when it is finished, and where the last one ends.
    var chapters: (list: [Chapter], end: MediaTime) = ([], .zero)
    /// The room the disk keeps beyond the end of a file: the bytes still waiting when the disk
    /// fills (at most a few seconds of a recording: more waiting than that holds up the
    /// encoder) and the end of the file.
    static let roomAhead: Int64 = 8 << 20

    /// ``roomAhead``, or an eighth of the free space of the disk that `folder` is on where that
    /// is less: a small disk keeps what it can (8 MB asked of a 4 MB disk ended the recording
    /// for the disk at its first write).
    static func roomAhead(on folder: URL) -> Int64 {
        guard let free = FreeSpace.of(folder)?.available else { return roomAhead }
        return min(roomAhead, max(0, free) / 8 / 4096 * 4096)
    }

    /// Where the presentation ends, from its start (an asset writer's session end): a
    /// fragmented MP4/MOV finalised in place presents nothing past it.
    var presentationEnd: MediaTime?

    /// The file's identity (which its rename into the name keeps): the list of chapters kept
    /// beside the name is this file's only if it says so (``ChapterSidecar``).
    let fileIdentity: FileIdentity?
    /// Whether a list of this file's chapters was put beside its name (``keepChapters(_:)``).
    var listsChapters = false
    /// The chapters so far while the file waits under a hidden name to replace another: the
    /// list beside the name stays that file's until this one takes the name.
    var chaptersWaitingForTheName: [Chapter]?
    /// Writes the list kept beside the file, off the recording's thread (it waits for the disk).
    let chapterWriter = DispatchQueue(label: "reel.chapters")

    /// Creates the file (never over one that exists unless the configuration allows it; a file
    /// it replaces stays until this one holds something) and its muxer; the streams follow
    /// (``add(_:)``) and ``begin()`` writes the header.
    ///
    /// - Throws: `.fileExists`, the folder's errors; nothing existing is touched then.
    package init(configuration: AssetWriter.Configuration, wrappingOutput: @escaping (any FileOutput) -> any FileOutput = { $0 }) throws {
        var configuration = configuration
        // A link at the name leads to the file replaced, which is replaced as any other: only
        // once the recording holds something, the link staying and leading to the recording.
        // (Opened through the link, the file it led to was emptied at the start: a recording
        // that then recorded nothing had lost it.)
        if configuration.overwrite { configuration.url = FileIdentity.followingLinks(configuration.url) }
        self.configuration = configuration
        // A full disk may have the room of the index reservation that the index will not need.
        let room = spareRoom
        // And the disk keeps room ahead of every file, for what is written after it fills (the
        // queue's bytes, the fragment being filled, the end of the file): the index's spare
        // room alone held too little when the duration was known (its reservation was sized to
        // it), and an MP4 that filled its disk lost its last half second.
        let writeQueue = configuration.writeBufferSize > 0
            ? Muxer.WriteQueue(maxBytes: configuration.writeBufferSize, output: wrappingOutput, spareRoom: { room.spareRange() },
                               roomAhead: Self.roomAhead(on: configuration.url.deletingLastPathComponent())) : nil
        if configuration.overwrite, FileIdentity.isRegularFile(configuration.url) {
            // Never one that another program is recording right now.
            try RecordingLock.checkNotBeingWritten(configuration.url)
            // The file to replace is the one there now, known before the recording's own file
            // appears beside it (a file put at the name once that one is there is never
            // replaced: known after, it was, in a race a test lost under load).
            let replaced = FileIdentity(itself: configuration.url)
            let temporary = FilePlacement.temporaryURL(beside: configuration.url, purpose: "new")
            muxer = try Muxer(url: temporary, container: configuration.container, overwrite: false, writeQueue: writeQueue)
            placement = RecordingPlacement(hidden: temporary, replacing: configuration.url, file: replaced)
        } else {
            muxer = try Muxer(url: configuration.url, container: configuration.container, overwrite: configuration.overwrite,
                              writeQueue: writeQueue)
            placement = RecordingPlacement(named: configuration.url)
        }
        lock = muxer.takeLock()
        fileIdentity = lock?.identity ?? FileIdentity(itself: placement.url)
        // With no file at the name, a list of chapters beside it is a leftover of an earlier
        // recording there (killed, then deleted): it must not become this one's.
        if !placement.isProvisional { ChapterSidecar.remove(for: configuration.url, unlessOf: fileIdentity) }
    }

    deinit {
        lock?.release()
    }

    // MARK: PacketSink

    package func add(_ stream: EncodedStream) throws {
        let index = try muxer.addStream(stream)
        streamIndices[ObjectIdentifier(stream)] = index
        switch stream.kind {
        case .video:
            videoStream = index
        case .audio:
            let parameters = stream.parameters.pointer.pointee
            audioStreams[ObjectIdentifier(stream)] = (index, audioMuxedEnd.count, Int64(parameters.initial_padding))
            audioMuxedEnd.append(0)
            let frameSize = parameters.frame_size > 0 ? Int(parameters.frame_size) : 1024
            audioPacketRates.append(Double(parameters.sample_rate) / Double(frameSize))
        }
    }

    package func begin() throws {
        try muxer.writeHeader(fragmentInterval: configuration.fragmentInterval) { [self] headerSize in
            indexReservation = Int64(reservation(headerSize: headerSize))
            return Int(indexReservation)
        }
        mediaStart = muxer.bytesWritten
        if let reserved = muxer.indexReservation, let estimate = indexEstimate(headerSize: Int(muxer.headerSize)) {
            spareRoom.reserved(offset: reserved.offset, size: Int64(reserved.size), estimate: estimate)
        }
    }

    /// The space the header keeps for the final index (see ``indexReservation``).
    private func reservation(headerSize: Int) -> Int {
        if let bytes = configuration.indexReservation { return bytes }
        var bytes = indexReservationEstimate(headerSize: headerSize)
        // Under a size limit the reservation takes at most an eighth of the room (a bigger
        // index is written by copying at the end).
        if let limit = configuration.maximumFileSize { bytes = min(bytes, Int(clamping: limit / 8) / 4096 * 4096) }
        // Nor more than an eighth of the disk's free space: an hour's index on a disk with 2.5 MB
        // free filled it before the first fragment, and the recording ended for the disk after
        // one frame, where the disk had room for a minute and more.
        if let free = FreeSpace.of(url.deletingLastPathComponent())?.available {
            bytes = min(bytes, Int(clamping: max(0, free) / 8) / 4096 * 4096)
        }
        return bytes
    }

    package func write(_ packet: EncodedPacket) throws -> SinkFlow {
        try failingItself { try take(packet) }
    }

    /// Runs `body`, one of the file's own steps: a failure is the file's (its disk filled, say),
    /// not another sink's that the recording depends on (see ``failedItself``).
    private func failingItself<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch {
            failedItself = true
            throw error
        }
    }

    private func take(_ packet: EncodedPacket) throws -> SinkFlow {
        switch phase {
        case .writing: break
        case .full: return .full
        case .finished, .abandoned: return .gone
        }
        // The disk filled, and had back the reservation's room that the index of what was
        // recorded until shortly after needs not: the file takes nothing past that (its owner
        // ended the recording long before, see `SpareIndexRoom`).
        guard spareRoom.covers(packet.endTime) else {
            throw ReelError(.insufficientStorage, "no space left to write \(url.path)", errno: ENOSPC)
        }
        if packet.stream.kind == .video { return try takeVideo(packet) }
        guard let audio = audioStreams[ObjectIdentifier(packet.stream)] else {
            throw ReelError(.invalidConfiguration, "a packet of \(packet.stream) reached \(url.path), which has no such stream")
        }
        largestAudioPacket = max(largestAudioPacket, packet.byteCount)
        if let limit = configuration.maximumFileSize, projectedFileSize(adding: Int64(packet.byteCount), packets: 1) > limit {
            phase = .full
            isFull = true
            return .full
        }
        try muxer.write(packet, stream: audio.stream)
        spareRoom.recorded(from: packet.presentationTime, to: packet.endTime)
        try takeTheFilesName()
        audioMuxedEnd[audio.track] = max(audioMuxedEnd[audio.track], packet.pts + packet.durationTicks + audio.priming)
        return .ok
    }

    /// A video packet: written, or under a size limit held until its group is complete.
    private func takeVideo(_ packet: EncodedPacket) throws -> SinkFlow {
        // Keyframes are rare and large: what the encoder holds is mostly the frames between.
        if !packet.isKeyframe {
            recentVideoSizes.append(packet.byteCount)
            if recentVideoSizes.count > 30 { recentVideoSizes.removeFirst() }
        }
        guard configuration.maximumFileSize != nil else {
            try muxVideo(packet)
            return .ok
        }
        heldPackets.append(packet)
        guard packet.completesGroup else { return .ok }
        return try writeHeldPackets()
    }

    /// Writes the held video packets if the file stays within its limit with them; else drops
    /// them and takes nothing more.
    private func writeHeldPackets() throws -> SinkFlow {
        defer { heldPackets = [] }
        let bytes = heldPackets.reduce(Int64(0)) { $0 + Int64($1.byteCount) }
        if let limit = configuration.maximumFileSize, projectedFileSize(adding: bytes, packets: Int64(heldPackets.count)) > limit {
            phase = .full
            isFull = true
            return .full
        }
        for packet in heldPackets { try muxVideo(packet) }
        return .ok
    }

    private func muxVideo(_ packet: EncodedPacket) throws {
        guard let videoStream else {
            throw ReelError(.invalidConfiguration, "a video packet reached \(url.path), which has no video stream")
        }
        try muxer.write(packet, stream: videoStream)
        spareRoom.recorded(from: packet.presentationTime, to: packet.endTime)
        try takeTheFilesName()
        videoFramesMuxed += 1
        lastMuxedIndex = max(lastMuxedIndex, packet.pts)
    }

    /// Writes what the muxer holds to the disk (see ``Muxer/flush()``): at a pause, the file on
    /// the disk holds every packet taken.
    package func flush() throws {
        try failingItself { try flushHeld() }
    }

    private func flushHeld() throws {
        guard phase == .writing || phase == .full else { return }
        if phase == .writing, !heldPackets.isEmpty, heldPackets.last?.completesGroup == true { _ = try writeHeldPackets() }
        try muxer.flush()
        try takeTheFilesName()
    }

    /// Closes and finalises the file (see the type's description): what it holds is then in
    /// ``finished``. Does nothing after ``abandon()``.
    ///
    /// - Throws: `.nothingRecorded` for a file that was to replace another but got no video
    ///   frame (the other file stays); the disk's and the finalising's errors.
    package func finish() throws {
        try failingItself { try finishFile() }
    }

    private func finishFile() throws {
        switch phase {
        case .writing, .full: break
        case .finished, .abandoned: return
        }
        if !heldPackets.isEmpty, phase == .writing { _ = try writeHeldPackets() }
        phase = .finished
        // Held until the file is finalised, whichever way that goes.
        defer { lock?.release() }
        let fragmentedMP4 = configuration.fragmentInterval != nil && configuration.container.isISOBaseMedia
        // A fragmented MP4/MOV's index is written already: finalising puts them there.
        if !fragmentedMP4 { try muxer.setChapters(chapters.list, end: chapters.end) }
        try muxer.finish()
        // Replacing a file with a recording that has a video track but got no frame of it
        // (stopped in its first moments: a little audio at most) would lose the old file for
        // nothing the user recorded it for: that stays, and the new one goes.
        if let target = placement.replacing, videoStream != nil, videoFramesMuxed == 0 {
            if case .remove(let file) = placement.abandon() { unlink(file.path) }
            throw ReelError(.nothingRecorded, "no video frame was recorded, so \(target.path) was left as it was",
                            hint: "record for longer")
        }
        // Finished on purpose: it replaces the file (a recording that holds its video).
        try takeTheFilesName(finishing: true)
        try followTheFile()
        var finalisation = AssetWriter.Finalisation.notNeeded
        if [.flac, .wav, .ogg, .opus].contains(configuration.container), let repair = try? AudioFileRecovery.plan(url), repair.isNeeded {
            // A size limit keeps the encoder's last packets out, and FLAC's final STREAMINFO
            // (which comes with them) too: the header is made to say what the file holds.
            let bytes = try AudioFileRecovery.recover(url, repair: repair, into: nil, overwrite: false)
            finalisation = .inPlace(bytesWritten: bytes)
        }
        if fragmentedMP4 {
            // FFmpeg moved the fragmented file so its earliest packet decodes at zero; move it back.
            let shift = MediaTime.zero - (muxer.earliestDecodeTime ?? .zero)
            // Finalised in place the file keeps its size; over a size limit it is copied into
            // a compact one instead.
            let size = FileIdentity.size(of: url) ?? muxer.bytesWritten
            let fits = configuration.maximumFileSize.map { size <= $0 } ?? true
            // The writer's own file is finalised through its descriptor, never by its name: one
            // renamed or moved as the recording stops (a user tidying up) is finalised all the
            // same, and one whose folder was made read-only in place (its last fragment was
            // written through the descriptor already). A copy made back of a deleted file is
            // a file of its own, finalised at its name.
            let held = placement.isCopy ? nil : lock
            beforeFinalising?()
            var attempts = 0
            while true {
                do {
                    let done = try AssetWriter.finalise(url, held: held, container: configuration.container, shift: shift,
                                                        lateStarts: muxer.lateStarts, inPlace: muxer.indexReservation != nil && fits,
                                                        // A copy's index gets its chapter list too (see Remuxer),
                                                        // not an end: a small file with an end that cuts media off
                                                        // stays in place, where the edit list ends it (MP4Finaliser).
                                                        copyWhenSmall: configuration.indexReservation == nil,
                                                        fault: finaliseFault, chapters: chapters.list, end: presentationEnd,
                                                        beforePlacing: beforePlacingACopy)
                    finalisation = done.finalisation
                    if done.url != url { placement.found(movedTo: done.url) }
                    break
                } catch where held == nil && attempts < 3 && lock.map({ $0.whereabouts(expected: url) != .inPlace }) == true {
                    attempts += 1
                    try followTheFile()
                }
            }
            // Finalised in place, it may have been moved meanwhile: it is said where it is now.
            if let held, case .moved(let now) = held.whereabouts(expected: url) { placement.found(movedTo: now) }
        }
        placement.finalised()
        // The file holds its chapters now.
        removeChapterList()
        finished = Finished(url: url, finalisation: finalisation, bytes: FileIdentity.size(of: url) ?? muxer.bytesWritten,
                            videoFrames: videoFramesMuxed, videoEnd: videoEndIndex, audioEnds: audioMuxedEnd,
                            mediaBytes: muxer.payloadBytes, packets: muxer.packetCount)
    }

    /// Stops without finalising: the file keeps what reached the disk (for MP4/MOV the complete
    /// fragments), which plays. A file that was to replace another and holds no complete
    /// fragment yet goes; the other stays.
    package func abandon() { abandon(keepingLock: false) }

    /// ``abandon()``; `keepingLock`: the file's lock (and gate) stay held, for the file to be
    /// ended in place through them (then released by the caller).
    func abandon(keepingLock: Bool) {
        switch phase {
        case .writing, .full: break
        case .finished, .abandoned: return
        }
        phase = .abandoned
        heldPackets = []
        if firstMediaEnd == nil, muxer.bytesWritten > mediaStart { firstMediaEnd = muxer.bytesWritten }
        muxer.abandon()
        // Closing wrote what waited for the disk: a new file that now holds its first fragment
        // plays, and takes the name as it would have with its next packet.
        try? takeTheFilesName()
        // A hidden file that never took the name goes, and never listed its chapters there.
        if case .remove(let file) = placement.abandon() { unlink(file.path) }
        if !keepingLock { lock?.release() }
    }

    /// Gives up a file that holds nothing worth keeping (a video recording without a picture):
    /// the new file goes, and a file it was to replace stays. Returns `false`, doing nothing,
    /// once the new file has taken that file's name (it is all there is then) or the sink has
    /// finished.
    package func discardWithoutPicture() -> Bool {
        guard phase == .writing || phase == .full, !placement.hasReplacedAFile else { return false }
        phase = .abandoned
        heldPackets = []
        muxer.abandon()
        let file = url
        _ = placement.abandon()
        unlink(file.path)
        // The file is gone, and the markers placed in it with it.
        removeChapterList()
        lock?.release()
        return true
    }

    /// Abandons a sink that has taken nothing yet and removes its new file (a header only): for
    /// a start that fails after the file was made. One that has written packets is only
    /// abandoned: its file stays.
    package func discard() {
        // Also once abandoned (an encoder abandons its sinks first): no packet, no recording.
        let untouched = phase != .finished && muxer.packetCount == 0, replacing = placement.replacing != nil
        abandon()
        if untouched && !replacing {
            unlink(url.path)
            // Nothing was recorded: the markers placed (before anything was) go with the file.
            removeChapterList()
        }
    }
}
