import Foundation
import Synchronization
import ReelCore

/// A recording's clips as one sink: the one stream of packets of the recording's one encoder,
/// cut into a file per clip where the recorder says a clip begins (``cut(clip:at:)``), each
/// clip's first frame a keyframe the recorder asked the encoder for.
///
/// The packets' times are on the recording's timeline (the pauses taken out); each clip's file
/// starts at its own zero. Video packets go to the clip their presentation time falls in.
/// Audio packets likewise; each clip's sound comes from an audio encoder of its own (the
/// encoder finishes the track's encoder where a clip ends and carries the track on with a new
/// one: see ``ClipAudioSink``), so a clip after the first begins with that encoder's priming
/// before its zero, hidden by the file's edit list and left out by a merge, as the first's.
///
/// A clip's file is made when its first packet comes, and finished once every stream has
/// passed its end: its video at the pause (the encoder gives out what it held then), its
/// sound when the track's encoder is finished there (at the pause, once the sound has reached
/// it). The finish (the file's last writes, its finalise and syncs, its placement) runs on a
/// thread of its own, in clip order, so that the encoder's thread (the recorder's) does no
/// such I/O: a resume soon after a pause is not held up by the clip before it. The clip's owner
/// is told through ``Events`` on the encoder's thread, by ``deliverFinishedClips()``, which the
/// owner calls with every sample and when ``clipFinishedAside`` wakes it. Used from the
/// encoder's thread, one call at a time.
package final class ClipFileSink: ClipAudioSink {
    /// What the sink tells its owner, on the encoder's thread.
    package struct Events {
        /// The configuration of clip `clip`'s file (its URL and room); the file is made with it.
        package var configuration: (_ clip: Int) throws -> AssetWriter.Configuration
        /// Clip `clip`'s file has been made at `url`.
        package var opened: (_ clip: Int, _ url: URL) throws -> Void
        /// Clip `clip`'s file is about to be finished (its folder can be checked: a file
        /// deleted while written is copied back into it).
        package var finishing: (_ clip: Int) throws -> Void
        /// Clip `clip`'s file is finished: what it holds.
        package var finished: (_ clip: Int, _ file: MovieFileSink.Finished) throws -> Void
        /// Clip `clip`'s file held no picture of a video recording and was removed.
        package var discarded: (_ clip: Int, _ url: URL) throws -> Void

        /// Events that call these closures; each argument is the property of the same name.
        package init(configuration: @escaping (Int) throws -> AssetWriter.Configuration, opened: @escaping (Int, URL) throws -> Void,
                     finishing: @escaping (Int) throws -> Void = { _ in },
                     finished: @escaping (Int, MovieFileSink.Finished) throws -> Void, discarded: @escaping (Int, URL) throws -> Void) {
            self.configuration = configuration
            self.opened = opened
            self.finishing = finishing
            self.finished = finished
            self.discarded = discarded
        }
    }

    /// One clip: where it begins and ends on the recording's timeline, its file once made,
    /// and which streams have passed its end.
    private struct Clip {
        let index: Int
        let start: MediaTime
        var end: MediaTime?
        var file: MovieFileSink?
        var passed = Set<ObjectIdentifier>()
    }

    private let events: Events
    private var streams: [EncodedStream] = []
    private var clips: [Clip] = []
    private var isFull = false

    /// What the finishing thread did with a clip's file.
    private enum Outcome: @unchecked Sendable {
        case finished(MovieFileSink.Finished?)
        /// It held no picture of a video recording and was removed.
        case discarded(URL)
    }
    /// The thread that finishes the clips' files, made with the first.
    private var finisher: OutputWorker<@Sendable () -> Void>?
    /// The clips handed to the finisher and not delivered yet: their count, media bytes, share
    /// of a merge of the clips (as `ClipAccounting` counts a finished clip's) and bytes, as
    /// they were handed over (the recording's size counts them until their owner does).
    private var aside = Aside()
    private struct Aside {
        var count = 0, mediaBytes: Int64 = 0, share: Int64 = 0, bytes: Int64 = 0

        mutating func add(_ sign: Int64, _ figures: (media: Int64, share: Int64, bytes: Int64)) {
            count += Int(sign)
            mediaBytes += sign * figures.media
            share += sign * figures.share
            bytes += sign * figures.bytes
        }
    }
    /// What the finisher did, oldest first, for ``deliverFinishedClips()``.
    private let done = Outbox()
    private final class Outbox: Sendable {
        let items = Mutex<[(clip: Int, figures: (media: Int64, share: Int64, bytes: Int64), outcome: Result<Outcome, any Error>)]>([])
    }
    /// A clip's file on its way to the finishing thread, which owns it from then on.
    private struct Handed: @unchecked Sendable { let file: MovieFileSink }
    /// Called on the finishing thread when a clip's outcome is waiting to be delivered: the
    /// owner's thread may be waiting for samples that do not come (a pause).
    package var clipFinishedAside: (@Sendable () -> Void)?

    /// A sink that makes its clips' files through `events`; the first clip begins at zero
    /// unless ``cut(clip:at:)`` says otherwise before the first packet.
    package init(events: Events) {
        self.events = events
    }

    /// Clip `clip` begins at `time` on the recording's timeline; the clip before it (if any)
    /// ends there. Say it before any packet of the clip comes.
    package func cut(clip: Int, at time: MediaTime) {
        if let last = clips.indices.last, clips[last].end == nil || clips[last].end! > time { clips[last].end = time }
        clips.append(Clip(index: clip, start: time))
    }

    /// The clip that `time` falls in: the last that begins at or before it.
    private func clipIndex(at time: MediaTime) -> Int? {
        clips.lastIndex { $0.start <= time }
    }

    // MARK: PacketSink

    package func add(_ stream: EncodedStream) throws {
        streams.append(stream)
    }

    package func write(_ packet: EncodedPacket) throws -> SinkFlow {
        if isFull { return .full }
        if clips.isEmpty { cut(clip: 0, at: .zero) }
        let time = packet.presentationTime
        let id = ObjectIdentifier(packet.stream)
        guard var i = clipIndex(at: time) ?? clips.indices.first else { return .ok }
        // A carried-on audio encoder's priming lies before the next clip's zero, in a clip
        // whose sound is complete: it belongs to the next.
        while clips[i].passed.contains(id), i + 1 < clips.count { i += 1 }
        // Every clip before this one: this stream has passed its end.
        for j in clips.indices where j < i { clips[j].passed.insert(id) }
        if clips[i].file == nil { try open(i) }
        guard let file = clips[i].file else { return .ok }
        let flow = try file.write(packet.shifted(back: clips[i].start))
        if flow == .full { isFull = true }
        try finishPassedClips()
        return flow == .ok ? .ok : flow
    }

    /// Makes clip `i`'s file.
    private func open(_ i: Int) throws {
        let configuration = try events.configuration(clips[i].index)
        let file = try MovieFileSink(configuration: configuration)
        do {
            for stream in streams { try file.add(stream) }
            try file.begin()
            try events.opened(clips[i].index, file.url)
        } catch {
            file.discard()
            throw error
        }
        clips[i].file = file
    }

    /// Every packet of `stream` before `time` has come: the clips that begin before it have all
    /// of that stream (see ``ClipAudioSink``).
    package func audioEnded(_ stream: EncodedStream, at time: MediaTime) throws {
        for i in clips.indices where clips[i].start < time { clips[i].passed.insert(ObjectIdentifier(stream)) }
        try finishPassedClips()
    }

    /// Finishes the clips every stream has passed the end of.
    private func finishPassedClips() throws {
        while let first = clips.first, first.end != nil, streams.allSatisfy({ first.passed.contains(ObjectIdentifier($0)) }) {
            try finishFirst()
        }
    }

    /// The recording paused at `time`: clip `clip`'s video has all come (the encoder gave out
    /// what it held), and it ends there. Its sound may still come.
    package func pauseReached(clip: Int, at time: MediaTime) throws {
        guard let i = clips.firstIndex(where: { $0.index == clip }) else { return }
        if clips[i].end == nil || clips[i].end! > time { clips[i].end = time }
        for stream in streams where stream.kind == .video { clips[i].passed.insert(ObjectIdentifier(stream)) }
        try finishPassedClips()
    }

    /// Hands the first clip's file to the finishing thread (one that holds no picture of a
    /// video recording is removed there instead); its owner hears what it holds once it is
    /// finished (``deliverFinishedClips()``).
    private func finishFirst() throws {
        let clip = clips.removeFirst()
        guard let file = clip.file else { return }
        let withoutPicture = streams.contains(where: { $0.kind == .video }) && file.videoFramesMuxed == 0
        // Also for one without a picture: it may be finished after all (see `discardWithoutPicture`).
        try events.finishing(clip.index)
        let bytes = (media: file.mediaBytes, share: file.mediaBytes + 48 * file.packetsWritten, bytes: file.bytesWritten)
        aside.add(1, bytes)
        let finisher = finisher ?? OutputWorker(name: "reel.clips", capacity: 1 << 16, policy: .block) { $0() }
        self.finisher = finisher
        let done = done, wake = clipFinishedAside, index = clip.index
        let job = Handed(file: file)
        finisher.send { @Sendable in
            let file = job.file
            let outcome = Result<Outcome, any Error> {
                if withoutPicture, file.discardWithoutPicture() { return .discarded(file.url) }
                try file.finish()
                return .finished(file.finished)
            }
            done.items.withLock { $0.append((index, bytes, outcome)) }
            wake?()
        }
    }

    /// Tells the owner, in clip order, what the clips finished on the finishing thread hold,
    /// every one of them, then throws the first error (a clip that could not be finished, or
    /// the owner's). On the encoder's thread.
    package func deliverFinishedClips() throws {
        let outcomes = done.items.withLock { done in
            defer { done = [] }
            return done
        }
        var failure: (any Error)?
        for (clip, figures, outcome) in outcomes {
            aside.add(-1, figures)
            do {
                switch try outcome.get() {
                case .discarded(let url): try events.discarded(clip, url)
                case .finished(let finished): if let finished { try events.finished(clip, finished) }
                }
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
    }

    /// Waits until every clip handed to the finishing thread is finished.
    private func waitForFinisher() {
        finisher?.finish()
        finisher = nil
    }

    package func flush() throws {
        try deliverFinishedClips()
        for clip in clips { try clip.file?.flush() }
    }

    package func finish() throws {
        while !clips.isEmpty { try finishFirst() }
        waitForFinisher()
        try deliverFinishedClips()
    }

    package func abandon() {
        for clip in clips { clip.file?.abandon() }
        clips = []
        // Clips past their pause are finished all the same (their finish is under way, or
        // a moment's work), and listed as finished (a recovery of the folder takes them so).
        waitForFinisher()
        try? deliverFinishedClips()
    }

    // MARK: What it holds

    /// The files of the clips being recorded (not past their end yet).
    package var openFiles: [MovieFileSink] { clips.compactMap(\.file) }

    /// The clips not finished yet, or whose owner has not been told yet: those being recorded
    /// and those on the finishing thread.
    package var unfinishedCount: Int { clips.count { $0.file != nil } + aside.count }

    /// The share of a merge of the clips (see `ClipAccounting`) and the bytes of the clips on
    /// the finishing thread, which their owner has not counted yet.
    package var finishingShare: Int64 { aside.share }
    package var finishingBytes: Int64 { aside.bytes }

    /// The encoded media written into the clips not finished yet, or not told yet (read with
    /// every sample for the free-space check: no array is made for it).
    package var openMediaBytes: Int64 { clips.reduce(aside.mediaBytes) { $0 + ($1.file?.mediaBytes ?? 0) } }
}
