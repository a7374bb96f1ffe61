import Foundation
import Synchronization
import ReelCore

/// Keeps the last seconds of a recording's encoded video and audio in memory, and saves them
/// to a file when asked, without encoding again and without stopping the recording: the
/// replay buffer of game recorders ("save the last 30 seconds").
///
/// A replay buffer is a ``PacketSink``: add it to an ``AssetWriter`` (``AssetWriter/addSink(_:policy:)``)
/// and it takes the same packets as the writer's file, from the same encoders. It holds them
/// by reference (no copy), bounded by time and, optionally, by bytes:
///
/// - It keeps at least ``duration`` (once that much has been recorded) and at most
///   ``duration`` plus one keyframe interval: video is kept in whole groups from a keyframe,
///   so that a save starts where a player can. A keyframe every 2 seconds (see
///   ``recommendedKeyframeInterval``) keeps the overshoot small.
/// - Past ``maxBytes`` the oldest whole group of pictures goes at once (and the audio beside
///   it); ``statistics`` counts what went that way.
///
/// ``save(to:container:overwrite:)`` takes a snapshot of the packets under the buffer's lock
/// (a copy of references, quick) and writes the file outside it, so saves overlap each other
/// and the recording. The saved file starts on the latest keyframe at or before the newest
/// frame's end − ``duration``, its audio is cut at the sample that matches its first frame
/// (MP4/MOV: by an edit list; MKV: at the first audio packet from there, which starts at most
/// one packet later, in its place), its timestamps count from zero, and
/// it ends with the newest frame whose predecessors have all come out of the encoder.
public final class ReplayBuffer: PacketSink, Sendable {
    /// The keyframe interval advised for recordings with a replay buffer: 2 seconds.
    ///
    /// A save starts on a keyframe, so it may hold up to one interval more than asked for, and
    /// the buffer holds up to one interval more than its duration. 2 s keeps both small while
    /// costing little in size at usual bit rates (it is also what ``VideoSettings`` uses when
    /// no interval is set); 1 s halves the overshoot for some more bytes.
    public static let recommendedKeyframeInterval = MediaTime(value: 2, timescale: 1)

    /// The keyframe interval, in frames, that ``recommendedKeyframeInterval`` is at `rate`.
    public static func recommendedKeyframeInterval(at rate: FrameRate) -> Int {
        max(1, Int((recommendedKeyframeInterval.seconds * rate.framesPerSecond).rounded()))
    }

    /// What the buffer holds and what it dropped.
    public struct Statistics: Sendable, Hashable {
        /// The bytes of encoded data held now.
        public var bytes: Int64
        /// The packets held now, all streams together.
        public var packets: Int
        /// The span of video held now (from its oldest keyframe to the end of its newest frame).
        public var videoDuration: MediaTime
        /// Whole groups of pictures dropped to stay within ``ReplayBuffer/maxBytes``.
        public var groupsDroppedForSize: Int
        /// The bytes dropped to stay within ``ReplayBuffer/maxBytes`` (video and audio).
        public var bytesDroppedForSize: Int64
        /// The most bytes held at any time.
        public var mostBytesHeld: Int64
        /// The longest span of video held at any time.
        public var longestVideoHeld: MediaTime
    }

    /// How much the buffer keeps: at least this much of the newest media.
    public let duration: MediaTime
    /// The most bytes of encoded data the buffer holds, if limited.
    public let maxBytes: Int64?
    /// The folder whose disk holds the packets' bytes instead of memory, if any (see
    /// ``init(duration:maxBytes:spillFolder:)``).
    public let spillFolder: URL?
    private let window: Mutex<ReplayWindow>
    /// The spill, used under `window`'s lock (one writer at a time), and the first error of
    /// spilling (the packets then stay in memory: nothing is lost to a full disk).
    private let spill: Mutex<(spill: ReplaySpill?, error: ReelError?)>

    /// A buffer that keeps the last `duration` of what it is given in memory, in at most
    /// `maxBytes` bytes of encoded data if given.
    ///
    /// - Throws: `.invalidConfiguration` for a duration that is not positive or a byte limit
    ///   below 1.
    public convenience init(duration: MediaTime, maxBytes: Int64? = nil) throws {
        try self.init(duration: duration, maxBytes: maxBytes, spillFolder: nil)
    }

    /// A buffer that keeps the last `duration` of what it is given, in at most `maxBytes` bytes
    /// of encoded data if given.
    ///
    /// With `spillFolder`, the packets' bytes are kept in unnamed files on that folder's disk
    /// (mapped, handed back to the kernel as they are written) instead of the process's
    /// memory: for windows of many minutes, where `maxBytes` then bounds the disk space taken.
    /// Nothing is left in the folder, not even after a crash. Should the disk fill, packets are
    /// held in memory from then on and ``spillError`` says why.
    ///
    /// - Throws: `.invalidConfiguration` for a duration that is not positive or a byte limit
    ///   below 1; the file errors of making the first spill file in `spillFolder`.
    public convenience init(duration: MediaTime, maxBytes: Int64?, spillFolder: URL?) throws {
        try self.init(duration: duration, maxBytes: maxBytes, spillFolder: spillFolder, spillSegmentSize: ReplaySpill.segmentSize(forMaxBytes: maxBytes))
    }

    /// ``init(duration:maxBytes:spillFolder:)`` with spill files of `spillSegmentSize` bytes
    /// (``ReplaySpill/segmentSize(forMaxBytes:)`` unless a test needs a disk to fill sooner).
    package init(duration: MediaTime, maxBytes: Int64?, spillFolder: URL?, spillSegmentSize: Int) throws {
        guard duration > .zero else {
            throw ReelError(.invalidConfiguration, "a replay buffer must keep more than \(duration)",
                            hint: "give the replay buffer a duration of a second or more")
        }
        if let maxBytes, maxBytes < 1 {
            throw ReelError(.invalidConfiguration, "a replay buffer cannot be limited to \(maxBytes) bytes",
                            hint: "give a byte limit of at least a few megabytes, or none")
        }
        self.duration = duration
        self.maxBytes = maxBytes
        self.spillFolder = spillFolder
        window = Mutex(ReplayWindow(duration: duration, maxBytes: maxBytes))
        spill = Mutex((try spillFolder.map { try ReplaySpill(folder: $0, segmentSize: spillSegmentSize) }, nil))
    }

    /// Why packets are held in memory though the buffer spills to disk (its disk filled), if so.
    public var spillError: ReelError? { spill.withLock { $0.error } }

    /// Spill segments made on the thread that writes (none was made ahead in time).
    package var spillSegmentsMadeInLine: Int { spill.withLock { $0.spill?.segmentsMadeInLine ?? 0 } }

    // MARK: PacketSink

    /// ``SinkPolicy/optional``: a recording goes on without its replay buffer.
    public var policy: SinkPolicy { .optional }

    /// Takes note of a stream whose packets will follow.
    public func add(_ stream: EncodedStream) throws {
        window.withLock { $0.add(stream) }
    }

    /// Keeps `packet`, dropping what the bounds no longer allow: always ``SinkFlow/ok`` (a
    /// buffer is never full; it lets go of its oldest).
    public func write(_ packet: EncodedPacket) throws -> SinkFlow {
        let kept = spill.withLock { state -> EncodedPacket in
            guard let spill = state.spill, state.error == nil else { return packet }
            do {
                return try spill.spill(packet)
            } catch {
                state.error = error as? ReelError ?? ReelError(.ioFailure, "\(error)")
                return packet
            }
        }
        window.withLock { $0.take(kept) }
        return .ok
    }

    /// Nothing more comes; what is held can still be saved.
    public func finish() throws {
        window.withLock { $0.ended = true }
    }

    // MARK: State

    /// What the buffer holds now and what it has dropped.
    public var statistics: Statistics {
        window.withLock { w in
            let held = w.queues.reduce(0) { $0 + $1.live.count }
            let start = w.queues.first { $0.stream.kind == .video }?.live.first?.presentationTime
            var span = MediaTime.zero
            if let start, let end = w.newestVideoEnd { span = end - start }
            return Statistics(bytes: w.bytes, packets: held, videoDuration: span,
                              groupsDroppedForSize: w.counters.groupsDroppedForSize,
                              bytesDroppedForSize: w.counters.bytesDroppedForSize, mostBytesHeld: w.counters.mostBytesHeld,
                              longestVideoHeld: w.counters.longestVideoHeld)
        }
    }

    /// The part of the recording's timeline a save asked now holds at least: the last
    /// ``duration`` of the video held (from its oldest frame when it holds less) to the end of
    /// its newest frame; `nil` while it holds no video. (The save starts on a keyframe at or
    /// before that, and may wait for a little more: see ``save(to:container:overwrite:)``.)
    package var savedSpanIfAskedNow: Range<MediaTime>? {
        window.withLock { w in
            guard let first = w.queues.first(where: { $0.stream.kind == .video })?.live.first?.presentationTime,
                  let end = w.newestVideoEnd, first < end else { return nil }
            return max(first, end - duration)..<end
        }
    }

    // MARK: Saving

    /// Writes the last ``duration`` held (see the type's description for where it starts and
    /// ends) into a finished file at `url`, without re-encoding; recording goes on meanwhile.
    /// While the recording goes on, the save first waits until the video it holds reaches a
    /// second past what it held when asked (what the encoder still held then: the moment of
    /// asking is in the save), at most three seconds.
    /// The container is `container`, else the one `url`'s extension names.
    ///
    /// - Throws: `.fileExists` when `url` exists and `overwrite` is off (nothing is touched),
    ///   `.nothingRecorded` when nothing has been buffered yet, `.unsupportedFormat` for a container
    ///   that cannot hold the streams, and the errors of writing a file.
    public func save(to url: URL, container: Container? = nil, overwrite: Bool = false) async throws -> ReplaySummary {
        try await save(to: .file(url, overwrite: overwrite), container: container)
    }

    /// Writes what ``save(to:container:overwrite:)`` writes under the first of `candidates`
    /// that no file has, chosen once the file is complete (a crash meanwhile leaves no empty
    /// file of that name); the summary says which. The container is `container`, else the one
    /// the first candidate's extension names.
    ///
    /// - Throws: `.fileExists` when every candidate is taken; else as ``save(to:container:overwrite:)``.
    package func save(toFirstFreeOf candidates: [URL], container: Container? = nil) async throws -> ReplaySummary {
        try await save(to: .firstFree(candidates), container: container)
    }

    private func save(to destination: ReplayWriter.Destination, container: Container?) async throws -> ReplaySummary {
        // The video encoder holds the last moments (its lookahead: up to about a second) when
        // the save is asked: the save waits until what it gives reaches past the moment asked.
        let asked = window.withLock { $0.ended ? nil : $0.newestVideoEnd }
        return try await withCheckedThrowingContinuation { continuation in
            // File I/O blocks: it runs on a thread of its own, not on the caller's executor.
            let thread = Thread {
                if let asked { self.waitForVideo(reaching: asked + Self.encoderHold) }
                let (snapshot, ended) = self.window.withLock { ($0.snapshot(), $0.ended) }
                continuation.resume(with: Result {
                    try ReplayWriter.write(snapshot, duration: self.duration, ended: ended, to: destination, container: container)
                })
            }
            thread.name = "reel.replay-save"
            thread.start()
        }
    }

    /// How much later than the newest video it holds when a save is asked a save waits for:
    /// what a video encoder still holds then (x264's lookahead is under a second at the
    /// presets and rates a recording uses).
    static let encoderHold = MediaTime(value: 1, timescale: 1)

    /// Waits (at most three seconds) until the video held reaches `time`, or the recording ends.
    private func waitForVideo(reaching time: MediaTime) {
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline {
            let (reached, ended) = window.withLock { ($0.newestVideoEnd, $0.ended) }
            if ended || (reached.map { $0 >= time } ?? true) { return }
            usleep(20_000)
        }
    }

    /// ``save(to:container:overwrite:)`` on the calling thread.
    package func saveNow(to url: URL, container: Container? = nil, overwrite: Bool = false) throws -> ReplaySummary {
        let (snapshot, ended) = window.withLock { ($0.snapshot(), $0.ended) }
        return try ReplayWriter.write(snapshot, duration: duration, ended: ended, to: .file(url, overwrite: overwrite), container: container)
    }

    /// Whether anything has been buffered that a save could write (a keyframe may still be
    /// missing: see ``save(to:container:overwrite:)``).
    public var holdsPackets: Bool { statistics.packets > 0 }
}
