import Foundation
import Synchronization
import ReelCore
import ReelSystem

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
/// Every disk step of a clip runs on one of two threads of the sink's own, so that the
/// encoder's thread (the recorder's) does no disk I/O: a resume soon after a pause is not held
/// up by the clip before it, nor by the next one's file. Each thread runs its jobs in order:
///
/// 1. On `reel.clips.open`, a clip's file is *made* ahead (created, its header written),
///    unlisted: the first clip's where it is cut, each next one's when the clip before is
///    handed to be finished (at the pause), so that at the resume it is there. Before the
///    folder is looked at: one moved meanwhile is followed, one deleted made again.
/// 2. There too, when the clip's first packet comes, the file is *listed* in the manifest
///    (``Events``'s `opened`), then handed to the encoder's thread, which writes the packets
///    into it. The packets that come meanwhile wait in memory, in order (so the clip is
///    sample-exact), bounded: past ``waitingLimit`` bytes the encoder's thread waits for the
///    file. That is a moment: never behind the clip before's finish (step 3, on the other
///    thread), however long that takes.
/// 3. On `reel.clips`, once every stream has passed the clip's end its file is *finished* (the
///    file's last writes, its finalise and syncs, its placement): its video at the pause (the
///    encoder gives out what it held then), its sound when the track's encoder is finished
///    there (at the pause, once the sound has reached it).
/// 4. What its owner does with a finished clip on the disk (the manifest says it is finished)
///    comes back as a ``Listing`` and runs on `reel.clips` too, after the finish; the owner
///    says the clip finished once that is done (an app that hears it finds the folder as the
///    manifest says). The owner writes the manifest whole and never an older one over a newer
///    (both threads write it).
///
/// A kill at any moment leaves a folder a recovery knows: the manifest lists a file before
/// any packet reaches it (the packets go to the file only once it is listed), and a file made
/// ahead and not listed holds nothing (a header), which a recovery or the next recording
/// tidies away; one made ahead for a clip that never comes (the recording ended while paused)
/// is removed. The clip's owner is told through ``Events`` on the encoder's thread, by
/// ``deliverFinishedClips()``, which the owner calls with every sample and when
/// ``clipFinishedAside`` wakes it. Used from the encoder's thread, one call at a time.
package final class ClipFileSink: ClipAudioSink {
    /// Work on the disk that follows what the owner heard (a finished clip listed in the
    /// manifest): run on the finishing thread, after the clips' files finished before it.
    package typealias DiskWork = @Sendable () throws -> Void

    /// What the owner does on the disk with a clip finished or discarded (``write``, on the
    /// finishing thread), and what it does once that is done (``then``, on the encoder's thread:
    /// say the clip finished, once the manifest says so). Not done if the write failed.
    package struct Listing {
        package var write: DiskWork
        package var then: (() -> Void)?

        /// A listing that writes with `write`, then runs `then`.
        package init(write: @escaping DiskWork, then: (() -> Void)? = nil) {
            self.write = write
            self.then = then
        }
    }

    /// What the sink tells its owner: on the encoder's thread, except where said.
    package struct Events {
        /// The configuration of clip `clip`'s file (its URL and room). The file is made with it
        /// on the opening thread; its room is asked again when the file is taken into use.
        package var configuration: (_ clip: Int) -> AssetWriter.Configuration
        /// Where the clip file at `url` goes now, on either clips' thread, before a clip's file is
        /// made, listed or finished: its folder moved or deleted meanwhile is followed, or made
        /// again (a file deleted with it while written is copied back into it).
        package var placing: @Sendable (_ url: URL) throws -> URL
        /// Clip `clip`'s file has been made at `url` and its first packet has come: on the
        /// opening thread (while a clip before it may be finished on the other), before any
        /// packet is written into it.
        package var opened: @Sendable (_ clip: Int, _ url: URL) throws -> Void
        /// Clip `clip`'s file is finished: what it holds. Returns what follows on the disk.
        package var finished: (_ clip: Int, _ file: MovieFileSink.Finished) throws -> Listing?
        /// Clip `clip`'s file held no picture of a video recording and was removed. Returns what
        /// follows on the disk.
        package var discarded: (_ clip: Int, _ url: URL) throws -> Listing?

        /// Events that call these closures; each argument is the property of the same name.
        package init(configuration: @escaping (Int) -> AssetWriter.Configuration,
                     placing: @escaping @Sendable (URL) throws -> URL = { $0 },
                     opened: @escaping @Sendable (Int, URL) throws -> Void,
                     finished: @escaping (Int, MovieFileSink.Finished) throws -> Listing?,
                     discarded: @escaping (Int, URL) throws -> Listing?) {
            self.configuration = configuration
            self.placing = placing
            self.opened = opened
            self.finished = finished
            self.discarded = discarded
        }
    }

    /// One clip: where it begins and ends on the recording's timeline, its file once taken
    /// into use (or asked for, and the packets that wait for it), and which streams have passed
    /// its end.
    private struct Clip {
        let index: Int
        let start: MediaTime
        var end: MediaTime?
        var file: MovieFileSink?
        /// Its file, asked of the opening thread when its first packet came, until taken.
        var opening: Opening?
        /// The packets that came before its file was listed, oldest first, and their bytes.
        var waiting: [EncodedPacket] = []
        var waitingBytes: Int64 = 0
        var passed = Set<ObjectIdentifier>()

        /// Whether its first packet has come.
        var hasBegun: Bool { file != nil || opening != nil }
    }

    /// The bytes of packets that may wait in memory for their clip's file: past them the
    /// encoder's thread waits (seconds of a recording: the disk is slow to make the file).
    static let waitingLimit: Int64 = 32 << 20

    private let events: Events
    private var streams: [EncodedStream] = []
    private var clips: [Clip] = []
    /// Files made ahead for clips whose first packet has not come (by clip).
    private var prepared: [Int: Opening] = [:]
    /// What the owner does once each listing handed to the finishing thread is written, in order.
    private var listings: [(() -> Void)?] = []
    private var isFull = false

    /// What the finishing thread did with a clip's file.
    private enum Outcome: @unchecked Sendable {
        case finished(MovieFileSink.Finished?)
        /// It held no picture of a video recording and was removed.
        case discarded(URL)
    }
    /// The threads that make and list the clips' files, and that finish them.
    private var threads = Threads()
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
        /// Whether each ``Listing``'s write was done, oldest first, and the first failure.
        let listed = Mutex<[Bool]>([])
        let failure = Mutex<(any Error)?>(nil)
    }
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
        // Its file is made now unless it was at the pause before (the first clip's: at the start).
        prepare(clip)
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
        if clips[i].file == nil {
            if clips[i].opening == nil { open(i) }
            // Until the file is listed the packets wait (the manifest lists a file before it
            // holds anything); past the limit, for the file.
            guard try take(i, waiting: clips[i].waitingBytes >= Self.waitingLimit) else {
                clips[i].waiting.append(packet)
                clips[i].waitingBytes += Int64(packet.byteCount)
                try finishPassedClips()
                return .ok
            }
            if isFull { return .full }
        }
        guard let file = clips[i].file else { return .ok }
        let flow = try file.write(packet.shifted(back: clips[i].start))
        if flow == .full { isFull = true }
        try finishPassedClips()
        return flow == .ok ? .ok : flow
    }

    // MARK: A clip's file, made and listed on the opening thread

    /// Has clip `clip`'s file made on the opening thread, unless it is already (or its first
    /// packet came).
    private func prepare(_ clip: Int) {
        guard prepared[clip] == nil, !clips.contains(where: { $0.index == clip && $0.hasBegun }) else { return }
        let opening = Opening(clip: clip, configuration: events.configuration(clip))
        prepared[clip] = opening
        let streams = streams, placing = events.placing
        threads.run(on: .opening) { Self.make(opening, streams: streams, placing: placing) }
    }

    /// Clip `i`'s first packet has come: its file is listed on the opening thread (made again
    /// first if its folder was deleted since), then handed over (``take(_:waiting:)``), while
    /// the clip before it may still be being finished on the other.
    private func open(_ i: Int) {
        prepare(clips[i].index)
        guard let opening = prepared.removeValue(forKey: clips[i].index) else { return }
        clips[i].opening = opening
        let streams = streams, placing = events.placing, opened = events.opened, wake = clipFinishedAside
        threads.run(on: .opening) {
            let outcome = Result<Handed, any Error> {
                if let failure = opening.failure { throw failure }
                guard var file = opening.file else { throw ReelError(.ioFailure, "the file of clip \(opening.clip + 1) was not made") }
                opening.file = nil
                let url = try placing(file.url)
                if case .inPlace = file.lock?.whereabouts(expected: url) ?? .inPlace {
                    if url != file.url { file.placement.found(movedTo: url) }     // its folder moved
                } else {
                    // Gone from the folder (deleted with it) since it was made: made again there.
                    Self.remove(file)
                    Self.make(opening, streams: streams, placing: { $0 })
                    if let failure = opening.failure { throw failure }
                    file = opening.file!
                    opening.file = nil
                }
                do {
                    try opened(opening.clip, file.url)
                } catch {
                    file.discard()
                    throw error
                }
                return Handed(file: file)
            }
            opening.outcome.withLock { $0 = outcome }
            opening.published.signal()
            wake?()
        }
    }

    /// Takes clip `i`'s file into use once it is listed — at once, or waiting for it if
    /// `waiting` — and writes the packets that waited for it; returns whether it has its file.
    /// Throws why the file could not be made or listed.
    private func take(_ i: Int, waiting: Bool) throws -> Bool {
        guard clips[i].file == nil else { return true }
        guard let opening = clips[i].opening else { return false }
        if waiting, opening.outcome.withLock({ $0 == nil }) { opening.published.wait() }
        guard let outcome = opening.outcome.withLock({ $0 }) else { return false }
        clips[i].opening = nil
        let file = try outcome.get().file
        // The room the clips before it left in the merged file, as it is now.
        file.configuration.maximumFileSize = events.configuration(clips[i].index).maximumFileSize
        clips[i].file = file
        let packets = clips[i].waiting
        clips[i].waiting = []
        clips[i].waitingBytes = 0
        for packet in packets where !isFull {
            if try file.write(packet.shifted(back: clips[i].start)) == .full { isFull = true }
        }
        return true
    }

    /// Removes the file made ahead for clip `clip`, which never came (or came without a packet).
    private func removePrepared(_ clip: Int) {
        guard let opening = prepared.removeValue(forKey: clip) else { return }
        threads.run(on: .opening) {
            guard let file = opening.file else { return }
            opening.file = nil
            Self.remove(file)
        }
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
    /// finished (``deliverFinishedClips()``). Unless the recording is `ending`, the next clip's
    /// file is made first, there, so that it is ready at the resume.
    private func finishFirst(ending: Bool = false) throws {
        // Its packets that still wait for its file go into it first (a clip this short waits
        // for its file to be listed).
        if clips[0].opening != nil { _ = try take(0, waiting: true) }
        let clip = clips.removeFirst()
        guard let file = clip.file else {
            removePrepared(clip.index)  // made ahead, and no packet came
            if !ending { prepare(clip.index + 1) }
            return
        }
        let withoutPicture = streams.contains(where: { $0.kind == .video }) && file.videoFramesMuxed == 0
        let bytes = (media: file.mediaBytes, share: file.mediaBytes + 48 * file.packetsWritten, bytes: file.bytesWritten)
        aside.add(1, bytes)
        // With its room counting this clip; made while this clip is finished.
        if !ending { prepare(clip.index + 1) }
        let done = done, wake = clipFinishedAside, index = clip.index, placing = events.placing
        let job = Handed(file: file)
        threads.run(on: .finishing) {
            let file = job.file
            let outcome = Result<Outcome, any Error> {
                // Its folder moved or deleted meanwhile: followed, or made again (a file deleted
                // with it is copied back into it). Also for one without a picture: it may be
                // finished after all (see `discardWithoutPicture`).
                let followed = Result { _ = try placing(file.url) }
                if withoutPicture, file.discardWithoutPicture() { return .discarded(file.url) }
                try file.finish()
                try followed.get()
                return .finished(file.finished)
            }
            done.items.withLock { $0.append((index, bytes, outcome)) }
            wake?()
        }
    }

    /// Tells the owner, in clip order, what the clips finished on the finishing thread hold,
    /// every one of them, then throws the first error (a clip that could not be finished, the
    /// owner's, or its disk work's). Takes the files listed since into use. On the encoder's
    /// thread.
    package func deliverFinishedClips() throws {
        let outcomes = done.items.withLock { done in
            defer { done = [] }
            return done
        }
        var failure: (any Error)?
        for (clip, figures, outcome) in outcomes {
            aside.add(-1, figures)
            do {
                let listing: Listing?
                switch try outcome.get() {
                case .discarded(let url): listing = try events.discarded(clip, url)
                case .finished(let finished): listing = try finished.flatMap { try events.finished(clip, $0) }
                }
                if let listing { list(listing) }
            } catch {
                failure = failure ?? error
            }
        }
        for i in clips.indices where clips[i].opening != nil {
            do { _ = try take(i, waiting: false) } catch { failure = failure ?? error }
        }
        let written = done.listed.withLock { listed in
            defer { listed = [] }
            return listed
        }
        for ok in written {
            let then = listings.removeFirst()
            if ok { then?() }
        }
        if let error = done.failure.withLock({ $0 }) { failure = failure ?? error }
        if let failure { throw failure }
    }

    /// Runs the owner's listing on the finishing thread; what follows it is done by the next
    /// ``deliverFinishedClips()``, which throws its failure.
    private func list(_ listing: Listing) {
        listings.append(listing.then)
        let done = done, wake = clipFinishedAside, write = listing.write
        threads.run(on: .finishing) {
            do {
                try write()
                done.listed.withLock { $0.append(true) }
            } catch {
                done.failure.withLock { $0 = $0 ?? error }
                done.listed.withLock { $0.append(false) }
            }
            wake?()
        }
    }

    /// Waits until every job on both clips' threads is done.
    private func waitForFinisher() {
        threads.drain()
    }

    package func flush() throws {
        try deliverFinishedClips()
        for clip in clips { try clip.file?.flush() }
    }

    package func finish() throws {
        var failure: (any Error)?
        do {
            while !clips.isEmpty { try finishFirst(ending: true) }
        } catch {
            failure = error
        }
        for clip in Array(prepared.keys) { removePrepared(clip) }
        // What the owner does with the last clips on the disk is done before the end too.
        for _ in 0..<2 {
            waitForFinisher()
            do { try deliverFinishedClips() } catch { failure = failure ?? error }
        }
        if let failure { throw failure }
    }

    package func abandon() {
        for clip in Array(prepared.keys) { removePrepared(clip) }
        // Clips past their pause are finished all the same (their finish is under way, or
        // a moment's work), and listed as finished (a recovery of the folder takes them so);
        // a file listed meanwhile takes the packets that waited for it.
        waitForFinisher()
        for i in clips.indices where clips[i].opening != nil { _ = try? take(i, waiting: false) }
        for clip in clips { clip.file?.abandon() }
        clips = []
        for _ in 0..<2 {
            try? deliverFinishedClips()
            waitForFinisher()
        }
    }

    // MARK: What it holds

    /// The files of the clips being recorded (not past their end yet).
    package var openFiles: [MovieFileSink] { clips.compactMap(\.file) }

    /// The clips not finished yet, or whose owner has not been told yet: those being recorded
    /// and those on the finishing thread.
    package var unfinishedCount: Int { clips.count(where: \.hasBegun) + aside.count }

    /// The share of a merge of the clips (see `ClipAccounting`) and the bytes of the clips on
    /// the finishing thread, which their owner has not counted yet.
    package var finishingShare: Int64 { aside.share }
    package var finishingBytes: Int64 { aside.bytes }

    /// The encoded media written into the clips not finished yet (or waiting for their file),
    /// or not told yet (read with every sample for the free-space check: no array is made for it).
    package var openMediaBytes: Int64 { clips.reduce(aside.mediaBytes) { $0 + ($1.file?.mediaBytes ?? 0) + $1.waitingBytes } }
}
