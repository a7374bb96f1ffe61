import Foundation
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
/// it). The clip's owner is told through ``Events``. Used from the encoder's thread, one call
/// at a time.
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

    /// Finishes the first clip's file and tells the owner what it holds.
    private func finishFirst() throws {
        let clip = clips.removeFirst()
        guard let file = clip.file else { return }
        if streams.contains(where: { $0.kind == .video }), file.videoFramesMuxed == 0, file.discardWithoutPicture() {
            try events.discarded(clip.index, file.url)
            return
        }
        try events.finishing(clip.index)
        try file.finish()
        if let finished = file.finished { try events.finished(clip.index, finished) }
    }

    package func flush() throws {
        for clip in clips { try clip.file?.flush() }
    }

    package func finish() throws {
        while !clips.isEmpty { try finishFirst() }
    }

    package func abandon() {
        for clip in clips { clip.file?.abandon() }
        clips = []
    }

    // MARK: What it holds

    /// The files of the clips not finished yet.
    package var openFiles: [MovieFileSink] { clips.compactMap(\.file) }

    /// The encoded media written into the clips not finished yet (read with every sample for
    /// the free-space check: no array is made for it).
    package var openMediaBytes: Int64 { clips.reduce(0) { $0 + ($1.file?.mediaBytes ?? 0) } }
}
