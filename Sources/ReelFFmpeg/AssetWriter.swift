import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// Writes encoded video and audio into a media file, in the spirit of `AVAssetWriter`.
///
/// Video frames are encoded with libavcodec (H.264 through libx264 by default) after
/// conversion by libswscale; audio is resampled by libswresample and encoded (AAC by default).
/// MP4 and MOV files are written fragmented while recording, so a file cut off by a crash
/// plays up to its last fragment, and finalised at ``finish()`` into a regular file with its
/// index at the front: in place where space was reserved for the index (no second copy of the
/// media data, see ``Finalisation``), else by copying. MKV files are written as they are.
///
/// One encode serves more than the file: the writer is a ``StreamEncoder`` whose first sink is
/// its file; every packet that comes out of the encoders is an ``EncodedPacket`` value,
/// written into the file and handed to each sink added with ``addSink(_:)`` (a
/// ``ReplayBuffer``, say), which shares its data without a copy.
///
/// The file's bytes are written by a thread of the writer's own, from a queue bounded by
/// ``Configuration/writeBufferSize``: a slow write holds up appending only once the queue is
/// full, and a write that fails (a full disk) fails the next append, or ``finish()``, with the
/// error it always did.
///
/// An asset writer is used from one thread at a time.
public final class AssetWriter: @unchecked Sendable {
    /// What the writer was asked to write.
    public let configuration: Configuration
    /// Where the file is being written: the configured URL, or, while replacing a file that
    /// exists, a name of its own beside it until the first packet is written.
    public private(set) var url: URL
    /// The file this one replaces once it holds a packet.
    private var replaces: URL?
    /// That file's device and inode when the recording began: another file put at its name
    /// meanwhile is not replaced.
    private var replacedFile: [UInt64]?
    /// Whether another file was found at that name: the name is then taken only at the finish
    /// (not looked at again with every packet).
    private var nameTakenByAnother = false
    /// Where the media begins in the file (after the header and the index reservation): a file
    /// larger than this holds a complete fragment (MKV: cluster), which plays.
    private var mediaStart: Int64 = 0
    /// Where the first media handed to the file ends (its first complete fragment: packets are
    /// flushed as they are muxed), once there is some: when that many bytes are on the disk,
    /// the file plays.
    private var firstMediaEnd: Int64?
    private let muxer: Muxer
    /// The encoders, and the fan-out of their packets to the file and the other sinks.
    let encoder: StreamEncoder
    private var video: VideoEncoder? { encoder.video }
    private var audio: [AudioEncoder] { encoder.audio }
    private var videoStream = -1
    private var audioStreams: [Int] = []
    private var lastVideoIndex: Int64 = -1
    private var firstVideoIndex: Int64 = -1
    private var videoFrames: Int64 = 0
    private var finished = false
    private var videoDTSShift: Int64 = 0
    /// Marks the file as a recording in progress from its creation until it is finalised (see
    /// `RecordingLock`).
    private let lock: RecordingLock?
    /// A fault injected into finalising in place (tests); `nil` in production.
    var finaliseFault: MP4Finaliser.Fault?

    // What reached the muxer, and the packets held back under a size limit.
    /// The frame numbers handed to the video encoder that have not come out of it, in order.
    private var inEncoder: [Int64] = []
    /// The highest frame number that has come out of the encoder.
    private var highestOut: Int64 = -1
    /// Video packets that came out but wait (under a size limit) until every frame shown before
    /// them has come out too, so that they are written, or refused, as a group.
    private var heldPackets: [EncodedPacket] = []

    private var videoFramesMuxed: Int64 = 0
    /// The new file has replaced the one it was to replace.
    private var tookTheName = false
    private var lastMuxedIndex: Int64 = -1
    /// The bytes of the latest video packets between keyframes (for what the encoder still
    /// holds). Keyframes are left out: a detailed 1080p screen's is over a megabyte, and taken as
    /// the size of every frame held in the encoder (about 16 at veryfast) it stopped a 3 MB
    /// recording at its first frame; a keyframe that does not fit is refused exactly, when it
    /// comes out (``writeHeldPackets()``).
    private var recentVideoSizes: [Int] = []
    /// Lays each track's audio by its timestamps (gaps silent, overlaps left out).
    private var audioAligners: [AudioTrackAligner] = []
    /// The end of the audio written to each track, in samples of its real audio.
    private var audioMuxedEnd: [Int64] = []
    /// Whether the file reached its ``Configuration/maximumFileSize``: appends are refused from then on.
    private(set) public var isFull = false

    /// Makes every track's first packet decode at the same time.
    ///
    /// Encoders start before zero: x264's first packet decodes B-frame-delay frames early, AAC
    /// primes 1024 samples. FFmpeg writes a fragmented MP4 without edit lists and moves the whole
    /// file by the first packet it sees, pulling any track that starts later back to zero, which
    /// would put audio and video out of step. So all tracks are made to start at one lead time:
    /// the video's decoding times move earlier by whole frames (legal: only the reorder offset
    /// grows), and the audio gets silence before its first sample. Finalising takes the lead
    /// off again and the edit list hides it.
    private func alignTrackStarts() throws {
        // Matroska moves every track by the same amount and needs none of this.
        guard configuration.container.isISOBaseMedia, let video, let rate = frameRate else { return }
        let frame = rate.frameDuration
        var lead = video.decodeDelay
        for a in audio {
            let priming = MediaTime(value: a.priming, timescale: Int32(a.settings.sampleRate))
            lead = max(lead, rate.frameIndex(at: priming, rounding: .up))
        }
        videoDTSShift = lead - video.decodeDelay
        for a in audio {
            let leadSamples = (frame * lead).convertedValue(to: Int32(a.settings.sampleRate), rounding: .nearest)
            try a.setLeadingSilence(max(0, leadSamples - a.priming))
        }
    }

    /// Checks what this build can write without opening anything.
    public static func validate(_ configuration: Configuration) throws {
        if let v = configuration.video {
            try v.settings.validate()
            if configuration.container.isAudioOnly {
                throw ReelError(.unsupportedFormat, ".\(configuration.container.fileExtension) files hold sound only, not video",
                                hint: "record the video into an .mp4, .mov or .mkv file, or record only audio sources")
            }
            guard configuration.container.canHold(v.settings.codec) else {
                throw ReelError(.unsupportedFormat, "\(configuration.container.rawValue) files cannot hold \(v.settings.codec.rawValue) video",
                                hint: LibraryHint.useMKVOrH264)
            }
            guard VideoEncoder.isAvailable(v.settings.codec) else {
                throw ReelError(.unsupportedFormat, "this FFmpeg has no \(v.settings.codec.rawValue) encoder", hint: LibraryHint.useH264)
            }
        }
        for a in configuration.audio {
            try a.settings.validate()
            guard configuration.container.canHold(a.settings.codec) else {
                throw ReelError(.unsupportedFormat, "\(configuration.container.rawValue) files cannot hold \(a.settings.codec.rawValue) audio",
                                hint: "use \(configuration.container.defaultAudioCodec.displayName) audio for .\(configuration.container.fileExtension) files")
            }
        }
        if configuration.video == nil && configuration.audio.isEmpty {
            throw ReelError(.invalidConfiguration, "nothing to record: no video and no audio track")
        }
    }

    /// Opens the file and the encoders. Throws `.fileExists` if the file exists and
    /// `overwrite` is off; nothing existing is touched then.
    public convenience init(configuration: Configuration) throws {
        try self.init(configuration: configuration, wrappingOutput: { $0 })
    }

    /// As ``init(configuration:)``, the file's writes going through what `wrappingOutput`
    /// makes of the file's output (tests hold or fail writes there); used only with a
    /// ``Configuration/writeBufferSize`` above 0.
    package init(configuration: Configuration, wrappingOutput: @escaping (any FileOutput) -> any FileOutput) throws {
        FFmpeg.silenceLibraryLogging()
        try Self.validate(configuration)
        self.configuration = configuration
        encoder = try StreamEncoder(video: configuration.video, audio: configuration.audio)
        audioMuxedEnd = Array(repeating: 0, count: configuration.audio.count)
        audioAligners = configuration.audio.map { AudioTrackAligner(format: $0.inputFormat) }
        let writeQueue = configuration.writeBufferSize > 0
            ? Muxer.WriteQueue(maxBytes: configuration.writeBufferSize, output: wrappingOutput) : nil
        // A file to be replaced stays until the recording holds something: the new one is
        // written under a name of its own and takes the file's name with its first packet.
        if configuration.overwrite, Self.isRegularFile(configuration.url) {
            // Never one that another program is recording right now.
            try RecordingLock.checkNotBeingWritten(configuration.url)
            let temporary = FilePlacement.temporaryURL(beside: configuration.url, purpose: "new")
            muxer = try Muxer(url: temporary, container: configuration.container, overwrite: false, writeQueue: writeQueue)
            url = temporary
            replaces = configuration.url
            replacedFile = Self.identity(of: configuration.url)
        } else {
            muxer = try Muxer(url: configuration.url, container: configuration.container, overwrite: configuration.overwrite,
                              writeQueue: writeQueue)
            url = configuration.url
        }
        lock = muxer.takeLock()
        do {
            try alignTrackStarts()
            if let video { videoStream = try muxer.addStream(video.stream) }
            for a in audio {
                audioStreams.append(try muxer.addStream(a.stream))
            }
            try muxer.writeHeader(fragmentInterval: configuration.fragmentInterval) { [self] headerSize in
                if let bytes = configuration.indexReservation { return bytes }
                let estimate = indexReservationEstimate(headerSize: headerSize)
                // Under a size limit the reservation takes at most an eighth of the room (a bigger
                // index is written by copying at the end).
                guard let limit = configuration.maximumFileSize else { return estimate }
                return min(estimate, Int(clamping: limit / 8) / 4096 * 4096)
            }
            mediaStart = muxer.bytesWritten
            try encoder.addSink(FileFeed(writer: self))
        } catch {
            muxer.abandon()
            unlink(url.path)  // our own new file, nothing recorded (a file it was to replace is untouched)
            lock?.release()
            throw error
        }
    }

    deinit {
        lock?.release()
    }

    /// The space to keep for the final index of a recording of the expected duration.
    private func indexReservationEstimate(headerSize: Int) -> Int {
        guard let interval = configuration.fragmentInterval else { return 0 }
        let packetRates = zip(audio, configuration.audio).map { encoder, track in
            Double(track.settings.sampleRate) / Double(max(1, encoder.context.pointee.frame_size > 0 ? encoder.context.pointee.frame_size : 1024))
        }
        let keyframes = configuration.video.map { Double($0.settings.effectiveKeyframeInterval) / $0.settings.frameRate.framesPerSecond }
        return MP4Finaliser.reservation(duration: configuration.expectedDuration ?? MediaTime(value: 3600, timescale: 1),
                                        frameRate: frameRate, audioPacketRates: packetRates, fragmentInterval: interval,
                                        keyframeInterval: keyframes, baseIndexSize: headerSize)
    }

    /// The streams of encoded packets this writer makes: its video track's first (if any),
    /// then its audio tracks' in order.
    public var streams: [EncodedStream] {
        get throws { try encoder.streams }
    }

    /// Adds a sink that takes every packet the encoders make, as the file does: the same
    /// encode serves both (a ``ReplayBuffer`` beside the recording, say). The sink learns of
    /// the ``streams`` at once and is finished with the writer. Packets that a size limit keeps
    /// out of the file still reach the sink.
    ///
    /// - Throws: `.alreadyRunning` once video or audio has been appended (the sink would miss
    ///   the start of the streams, their first keyframe); what the sink's ``PacketSink/add(_:)``
    ///   throws.
    public func addSink(_ sink: any PacketSink) throws {
        guard !finished else { throw ReelError(.alreadyRunning, "the writer has finished") }
        try encoder.addSink(sink)
    }

    /// Takes the packets of the writer's encoders into its file.
    private final class FileFeed: PacketSink {
        unowned let writer: AssetWriter
        init(writer: AssetWriter) { self.writer = writer }
        func add(_ stream: EncodedStream) throws {}
        func write(_ packet: EncodedPacket) throws {
            switch packet.stream.kind {
            case .video: try writer.emitVideo(packet)
            case .audio: try writer.emitAudio(packet, track: packet.stream.index - (writer.video == nil ? 0 : 1))
            }
        }
        func finish() throws {}
    }

    /// The frame rate of the video track.
    public var frameRate: FrameRate? { configuration.video?.settings.frameRate }

    /// The size the video is encoded at (the asked-for size, made even for 4:2:0).
    public var videoSize: PixelSize? { video?.outputSize }

    /// Sets the source time that becomes the file's zero, as `AVAssetWriter`'s
    /// `startSession(atSourceTime:)` does: from then on the times of appended frames and audio
    /// (``appendVideo(_:at:)``, ``appendVideo(_:)``, ``appendAudio(_:track:)``) are source
    /// times, and what lies before `time` is left out (audio cut at `time`). Without a call the
    /// session starts at zero.
    ///
    /// - Throws: `.alreadyRunning` once the session has started (a second call) or anything has
    ///   been appended.
    public func startSession(atSourceTime time: MediaTime) throws {
        guard !sessionStarted, !appendedAnything else {
            throw ReelError(.alreadyRunning, "the writer's session has started already",
                            hint: "start the session once, before appending anything")
        }
        sessionStarted = true
        sessionStart = time
    }

    /// The source time that is the file's zero (see ``startSession(atSourceTime:)``).
    public private(set) var sessionStart: MediaTime = .zero
    private var sessionStarted = false
    private var appendedAnything = false

    /// Encodes a frame at its own ``VideoFrame/presentationTime`` (a source time: see
    /// ``startSession(atSourceTime:)``). As ``appendVideo(_:at:)``.
    @discardableResult
    public func appendVideo(_ frame: VideoFrame) throws -> Bool {
        try appendVideo(frame, at: frame.presentationTime)
    }

    /// Encodes a frame at source time `time`, which lands at `time` less the session's start
    /// (``startSession(atSourceTime:)``; zero if never called) in the file. Frames are placed
    /// on the frame grid of the track's rate; a frame that lands in the same slot as the
    /// previous one, or before the session's start, is skipped and `false` returned.
    ///
    /// - Throws: `.invalidConfiguration` when there is no video track, or when `frame` is not of
    ///   the track's ``VideoTrack/inputFormat`` and ``VideoTrack/inputSize`` (nothing is written
    ///   then, and frames that fit can still follow); encoding and writing errors.
    @discardableResult
    public func appendVideo(_ frame: VideoFrame, at time: MediaTime) throws -> Bool {
        guard let video, let rate = frameRate else { throw ReelError(.invalidConfiguration, "this writer has no video track") }
        try video.checkFits(frame)
        appendedAnything = true
        let index = rate.frameIndex(at: time - sessionStart, rounding: .nearest)
        guard index >= 0, index > lastVideoIndex else { return false }
        if firstVideoIndex < 0 { firstVideoIndex = index }
        lastVideoIndex = index
        videoFrames += 1
        inEncoder.append(index)
        try advisingRecoveryWhenFull { try encoder.encodeVideo(frame, index: index) }
        return true
    }

    /// Encodes audio for track `track` at its ``AudioBuffer/presentationTime`` (a source time:
    /// it lands at that time less the session's start, see ``startSession(atSourceTime:)``).
    /// A buffer that starts later than the track's audio so far reaches leaves a gap, filled
    /// with silence; one that starts earlier overlaps, and the overlapping samples are left
    /// out (so is audio before the session's start). Differences of up to 20 ms are taken as
    /// jitter: the samples then follow on from the ones before.
    ///
    /// - Throws: `.invalidConfiguration` when there is no such track, or when `buffer` is not of
    ///   the track's ``AudioTrack/inputFormat`` (nothing is written then); encoding and writing
    ///   errors.
    public func appendAudio(_ buffer: AudioBuffer, track: Int) throws {
        guard audio.indices.contains(track) else { throw ReelError(.invalidConfiguration, "no audio track \(track)") }
        try audio[track].checkFits(buffer)
        appendedAnything = true
        var placed = buffer
        placed.presentationTime = buffer.presentationTime - sessionStart
        for piece in try audioAligners[track].place(placed) {
            try advisingRecoveryWhenFull { try encoder.appendAudio(piece, track: track) }
        }
    }

    /// A video packet out of the encoder: written, or under a size limit held until its group
    /// is complete.
    private func emitVideo(_ packet: EncodedPacket) throws {
        let index = packet.pts
        if let i = inEncoder.firstIndex(of: index) { inEncoder.remove(at: i) }
        highestOut = max(highestOut, index)
        // Keyframes are rare and large: what the encoder holds is mostly the frames between.
        if !packet.isKeyframe {
            recentVideoSizes.append(packet.byteCount)
            if recentVideoSizes.count > 30 { recentVideoSizes.removeFirst() }
        }
        guard configuration.maximumFileSize != nil else {
            try muxVideo(packet)
            return
        }
        guard !isFull else { return }
        heldPackets.append(packet)
        // Complete once no frame shown before the latest one is still in the encoder.
        if inEncoder.first.map({ $0 > highestOut }) ?? true { try writeHeldPackets() }
    }

    /// Writes the held video packets if the file stays within its limit with them; else
    /// drops them and every packet after them.
    private func writeHeldPackets() throws {
        defer { heldPackets = [] }
        let bytes = heldPackets.reduce(Int64(0)) { $0 + Int64($1.byteCount) }
        if let limit = configuration.maximumFileSize, projectedFileSize(adding: bytes, packets: Int64(heldPackets.count)) > limit {
            isFull = true
            return
        }
        for packet in heldPackets { try muxVideo(packet) }
    }

    private func muxVideo(_ packet: EncodedPacket) throws {
        try muxer.write(packet.decodedEarlier(by: videoDTSShift), stream: videoStream)
        try takeTheFilesName()
        videoFramesMuxed += 1
        lastMuxedIndex = max(lastMuxedIndex, packet.pts)
    }

    private func emitAudio(_ packet: EncodedPacket, track: Int) throws {
        if let limit = configuration.maximumFileSize {
            guard !isFull else { return }
            guard projectedFileSize(adding: Int64(packet.byteCount), packets: 1) <= limit else {
                isFull = true
                return
            }
        }
        let end = packet.pts + packet.durationTicks + audio[track].priming
        try muxer.write(packet, stream: audioStreams[track])
        try takeTheFilesName()
        audioMuxedEnd[track] = max(audioMuxedEnd[track], end)
    }

    /// Replaces the file this one is to replace once it holds something that plays: its first
    /// complete fragment is on the disk (packets are flushed as they are muxed), or, `finishing`,
    /// the recording is being finalised. Until then a kill leaves the old file as it was.
    private func takeTheFilesName(finishing: Bool = false) throws {
        guard let target = replaces, finishing || !nameTakenByAnother else { return }
        if firstMediaEnd == nil, muxer.bytesWritten > mediaStart { firstMediaEnd = muxer.bytesWritten }
        // Written, not only queued, up to the end of that fragment: a kill from now on leaves
        // the new file playing.
        guard finishing || firstMediaEnd.map({ muxer.bytesOnDisk >= $0 }) == true else { return }
        // A rename ignores locks: a recording that another program began there meanwhile stays.
        try RecordingLock.checkNotBeingWritten(target)
        if let now = Self.identity(of: target), now != replacedFile {
            // Another file was put at the name while recording (the one to replace moved away):
            // --overwrite was not about that one. It stays; the recording keeps its own name
            // until it is finished, then takes a free one beside it.
            guard finishing else {
                nameTakenByAnother = true
                return
            }
            let stem = target.deletingPathExtension().lastPathComponent, folder = target.deletingLastPathComponent()
            let names = (2...99).map { folder.appendingPathComponent("\(stem) (\($0))").appendingPathExtension(target.pathExtension) }
            url = try FilePlacement.placeAtFirstFree(url, candidates: names, what: "the recording")
            replaces = nil
            tookTheName = true
            return
        }
        if rename(url.path, target.path) != 0 {
            throw Syscall.fileError(errno, creating: target, action: "replace")
        }
        url = target
        replaces = nil
        tookTheName = true
    }

    /// Finalises the file where it is now. Someone may have renamed or moved it (on the same
    /// disk) while it was recorded: it is finalised at its new name, which the summary gives.
    /// One deleted while recorded still has all its content behind the writer's lock: that is
    /// copied back to its name first (to a free name beside it if the name was taken again),
    /// rather than vanishing when the writer lets go.
    private func followTheFile() throws {
        guard let lock else { return }
        switch lock.whereabouts(expected: url) {
        case .inPlace:
            return
        case .moved(let now):
            url = now
        case .deleted:
            let rescue = FilePlacement.rescueName(for: url)
            do {
                _ = try lock.copyContent(to: rescue)
            } catch var error as ReelError {
                error.hint = "\(url.path) was deleted while it was recorded, and what was recorded could not be copied back"
                throw error
            }
            url = rescue
        }
    }

    /// An upper bound of the size the file will have when finished, if `bytes` more in
    /// `packets` more packets are written: the media, the container's boxes for each packet
    /// and, for MP4/MOV, the index of a file finalised by copying (at most 48 bytes a packet:
    /// sample size, time, composition offset, sync flags, chunk entries), which is what a file
    /// over its limit is finalised in place would become.
    private func projectedFileSize(adding bytes: Int64, packets: Int64) -> Int64 {
        let payload = muxer.payloadBytes + bytes, count = muxer.packetCount + packets
        let perPacket: Int64 = configuration.container.isISOBaseMedia ? 48 : 32
        return muxer.headerSize + payload + perPacket * count + 4096
    }

    /// Bytes written so far (some may still wait for the disk: see
    /// ``Configuration/writeBufferSize``).
    public var bytesWritten: Int64 { muxer.bytesWritten }

    /// The queue of bytes waiting for the disk, if the file is written by a thread of its own.
    package var writeQueue: FileWriteQueue? { muxer.writeQueue }

    /// The packets written so far.
    public var packetsWritten: Int64 { muxer.packetCount }

    /// The bytes of encoded video and audio written so far (what the file holds without its
    /// container's boxes and index, and without the space kept for the index).
    public var mediaBytes: Int64 { muxer.payloadBytes }

    /// An estimate of the finished file's size: what is written, the packets held back for the
    /// limit, and the frames the video encoder still holds (in its lookahead), each as big as
    /// the latest frames between keyframes. The limit itself is kept exactly as packets come
    /// out (a group that does not fit is refused whole).
    public var projectedFileSize: Int64 {
        let encoding = Int64(inEncoder.count), heldBytes = heldPackets.reduce(Int64(0)) { $0 + Int64($1.byteCount) }
        return projectedFileSize(adding: heldBytes + encoding * typicalFrameBytes * 3 / 2,
                                 packets: encoding + Int64(heldPackets.count + audio.count))
    }

    /// The latest video packets' average size, keyframes left out: about what the next frame
    /// will add (0 until a frame other than a keyframe has come out).
    public var typicalFrameBytes: Int64 {
        recentVideoSizes.isEmpty ? 0 : Int64(recentVideoSizes.reduce(0, +) / recentVideoSizes.count)
    }

    /// Video frames appended so far.
    public var videoFrameCount: Int64 { videoFrames }

    /// Drains the encoders, writes the trailer and, for MP4/MOV recorded fragmented, rewrites
    /// the file as a regular one with its index at the front.
    public func finish() throws -> Summary {
        guard !finished else { throw ReelError(.notRunning, "the writer has already finished") }
        finished = true
        // Held until the file is finalised, whichever way that goes.
        defer { lock?.release() }
        do {
            return try advisingRecoveryWhenFull { try drainAndFinalise() }
        } catch var error as ReelError where error.code != .insufficientStorage && error.code != .nothingRecorded {
            // Whatever stopped the finalising (a folder made read-only, a failing disk), the
            // complete fragments are on the disk: say so, and how to finish them.
            if configuration.container.isISOBaseMedia || configuration.container == .mkv, Recovery.isCutOff(url) {
                let kept = "what was recorded is kept in \(url.path); finalise it with: reel recover \(Shell.quoted(url.path))"
                error.hint = error.hint.map { "\($0); \(kept)" } ?? kept
            }
            throw error
        }
    }

    private func drainAndFinalise() throws -> Summary {
        try encoder.finishVideo()
        if !heldPackets.isEmpty { try writeHeldPackets() }
        try encoder.finishAudio()
        // The file is finished first: a live stream still sending what it queued (for up to
        // its timeout, on a slow link) holds up nothing the user recorded.
        var sinksFinished = false
        defer { if !sinksFinished { try? encoder.finishSinks() } }
        try muxer.finish()
        // Replacing a file with a recording that has a video track but got no frame of it
        // (stopped in its first moments: a little audio at most) would lose the old file for
        // nothing the user recorded it for: that stays, and the new one goes.
        if let target = replaces, video != nil, videoFramesMuxed == 0 {
            unlink(url.path)
            replaces = nil
            throw ReelError(.nothingRecorded, "no video frame was recorded, so \(target.path) was left as it was",
                            hint: "record for longer")
        }
        // Finished on purpose: it replaces the file (a recording that holds its video).
        try takeTheFilesName(finishing: true)
        try followTheFile()
        let url = self.url
        var finalisation = Finalisation.notNeeded
        if [.flac, .wav, .ogg, .opus].contains(configuration.container), let repair = try? AudioFileRecovery.plan(url), repair.isNeeded {
            // A size limit keeps the encoder's last packets out, and FLAC's final STREAMINFO
            // (which comes with them) too: the header is made to say what the file holds.
            let bytes = try AudioFileRecovery.recover(url, repair: repair, into: nil, overwrite: false)
            finalisation = .inPlace(bytesWritten: bytes)
        }
        if configuration.fragmentInterval != nil && configuration.container.isISOBaseMedia {
            // FFmpeg moved the fragmented file so its earliest packet decodes at zero; move it back.
            let shift = MediaTime.zero - (muxer.earliestDecodeTime ?? .zero)
            // Finalised in place the file keeps its size; over a size limit it is copied into
            // a compact one instead.
            let size = Self.fileSize(url) ?? muxer.bytesWritten
            let fits = configuration.maximumFileSize.map { size <= $0 } ?? true
            finalisation = try Self.finalise(url, container: configuration.container, shift: shift,
                                             inPlace: muxer.indexReservation != nil && fits,
                                             copyWhenSmall: configuration.indexReservation == nil,
                                             fault: finaliseFault)
        }
        var duration = MediaTime.zero
        if let rate = frameRate, lastMuxedIndex >= 0 {
            duration = rate.time(ofFrame: lastMuxedIndex + 1)
        }
        var samples: [Int64] = []
        for (i, a) in audio.enumerated() {
            // What was written: all of it unless a size limit refused the last packets.
            let written = isFull ? min(a.encodedSampleCount, max(0, audioMuxedEnd[i])) : a.encodedSampleCount
            samples.append(written)
            duration = max(duration, MediaTime(value: written, timescale: Int32(a.settings.sampleRate)))
        }
        let bytes = Self.fileSize(url) ?? muxer.bytesWritten
        sinksFinished = true
        try encoder.finishSinks()
        return Summary(url: url, duration: duration, videoFrames: videoFramesMuxed, audioSamples: samples, bytes: bytes,
                       finalisation: finalisation)
    }

    /// Stops without draining or finalising: the file keeps what reached the disk (for MP4/MOV
    /// the complete fragments), which plays.
    public func abandon() {
        guard !finished else { return }
        finished = true
        heldPackets = []
        // The sinks keep what they took (a replay buffer can still be saved).
        encoder.abandon()
        if firstMediaEnd == nil, muxer.bytesWritten > mediaStart { firstMediaEnd = muxer.bytesWritten }
        muxer.abandon()
        // Closing wrote what waited for the disk: a new file that now holds its first fragment
        // plays, and takes the name as it would have with its next packet.
        try? takeTheFilesName()
        // Else nothing was written over the file it was to replace: that stays, and the new
        // one, which holds no complete fragment, goes.
        if replaces != nil { unlink(url.path) }
        lock?.release()
    }

    /// Video frames in the file so far.
    package var videoFramesWritten: Int64 { videoFramesMuxed }

    /// Gives up a file that holds nothing worth keeping (a video recording without a picture:
    /// stopped before its first frame, or under a size limit its first frame did not fit):
    /// the sinks keep what they took, the new file goes, and a file it was to replace stays.
    /// Returns `false`, doing nothing, once the new file has taken that file's name (it is all
    /// there is then) or the writer has finished.
    package func discardWithoutPicture() -> Bool {
        guard !finished, !tookTheName else { return false }
        finished = true
        heldPackets = []
        encoder.abandon()
        muxer.abandon()
        unlink(url.path)
        lock?.release()
        return true
    }

    /// Abandons a writer that has taken nothing yet and removes its new file (a header only):
    /// for a start that fails after the writer was made (a sink that cannot connect, say). A
    /// writer that has written packets is only abandoned: its file stays.
    package func discard() {
        let untouched = !finished && packetsWritten == 0
        abandon()
        if untouched && replaces == nil { unlink(url.path) }
    }
}
