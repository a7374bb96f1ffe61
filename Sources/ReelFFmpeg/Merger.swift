import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// Joins clips (the pieces of a paused and resumed recording, or any MP4/MOV/MKV files of the
/// same kind) into one file, one after the other.
///
/// Clips recorded with the same settings are joined by copying their packets, which takes about
/// as long as copying the files: the timestamps of each clip are moved to follow the one before,
/// and audio stays in step with video at every join. Clips that differ (size, codec, pixel
/// format, encoder settings, sample rate, channels) are refused, or with
/// ``MergeOptions/allowsReencoding`` decoded and encoded again with the first clip's settings.
///
/// The inputs are only read. The output is written under a temporary name in its folder and
/// takes its name only when complete; on failure nothing is left behind.
public enum Merger {
    /// Joins `inputs`, in order, into one file at `output`.
    ///
    /// `progress` hears how far the merge has come (bytes of the clips read of all their
    /// bytes), on the calling thread, a few times a second: the first report at once, the last
    /// when the file is complete; a merge that must encode again starts over as
    /// ``WorkProgress/Stage/reencoding``.
    ///
    /// - Throws: `ReelError` with `.incompatibleClips` (which clip differs from the first, and
    ///   how), `.invalidMedia` (a clip that is damaged, cut short or not a media file, named),
    ///   `.ioFailure` (a clip that does not exist), `.fileExists` (the output exists and
    ///   `overwrite` is off), `.insufficientStorage`, `.permissionDenied`,
    ///   `.invalidConfiguration` (no clips, or the output is one of the clips).
    public static func merge(_ inputs: [MergeInput], to output: URL, options: MergeOptions = .init(),
                             progress: (@Sendable (WorkProgress) -> Void)? = nil) throws -> MergeSummary {
        try merge(inputs, to: output, options: options, indexReservation: nil, progress: progress)
    }

    /// ``merge(_:to:options:progress:)`` with the space reserved for an MP4/MOV index forced (tests):
    /// `nil` decides from the clips, 0 reserves none.
    static func merge(_ inputs: [MergeInput], to output: URL, options: MergeOptions, indexReservation: Int?,
                      progress: (@Sendable (WorkProgress) -> Void)? = nil) throws -> MergeSummary {
        try merge(inputs, to: output, options: options, indexReservation: indexReservation, beforePlacing: nil, progress: progress)
    }

    /// ``merge(_:to:options:progress:)`` that tells `beforePlacing` of the complete merged file
    /// (under its temporary name, with the packets it left out) before it takes
    /// `output`'s name: a clips recovery notes the file (its identity stays with it through the
    /// rename) so that, cut off after the rename, its next run knows the file at `output` for
    /// its own merge. What `beforePlacing` throws ends the merge, the file removed.
    package static func merge(_ inputs: [MergeInput], to output: URL, options: MergeOptions,
                              beforePlacing: ((_ complete: URL, _ packetsLeftOut: [MergeSummary.PacketsLeftOut]) throws -> Void)?,
                              progress: (@Sendable (WorkProgress) -> Void)? = nil) throws -> MergeSummary {
        try merge(inputs, to: output, options: options, indexReservation: nil, beforePlacing: beforePlacing, progress: progress)
    }

    private static func merge(_ inputs: [MergeInput], to output: URL, options: MergeOptions, indexReservation: Int?,
                              beforePlacing: ((_ complete: URL, _ packetsLeftOut: [MergeSummary.PacketsLeftOut]) throws -> Void)?,
                              progress: (@Sendable (WorkProgress) -> Void)?) throws -> MergeSummary {
        FFmpeg.silenceLibraryLogging()
        guard !inputs.isEmpty else {
            throw ReelError(.invalidConfiguration, "there are no clips to merge", hint: "give at least one clip")
        }
        guard let container = options.container ?? Container(pathExtension: output.pathExtension) else {
            throw ReelError(.unsupportedFormat, "unknown file type '.\(output.pathExtension)' for \(output.lastPathComponent)",
                            hint: "name the output .mp4, .mov or .mkv")
        }
        // Replaced through a link, the file it leads to is replaced (the link stays), as a
        // recording's and a recovery's are: renamed over, the link itself was.
        let output = FileIdentity.followingLinks(output)
        try checkOutput(output, overwrite: options.overwrite, inputs: inputs)
        // A clip still being recorded is not complete: refused. The clips are held with shared
        // locks while they are read, so that neither a recorder nor a recovery rewrites one
        // under the merge.
        for input in inputs { try RecordingLock.checkNotBeingWritten(input.url) }
        let clips = try inputs.enumerated().map { try ClipFacts.probe($0.element.url, number: $0.offset + 1) }
        let locks = try inputs.map { try RecordingLock.lockExisting($0.url, exclusive: false) }
        defer { for lock in locks { lock.release() } }
        for clip in clips { try checkContainer(container, holds: clip, output: output) }

        var reason: Incompatibility? = clips.indices.lazy.compactMap {
            clips[$0].incompatibility(with: clips[0], soundMayBeMissing: inputs[$0].soundMayBeMissing)
        }.first
        var silence: [SilentPacket?] = []
        // Silence for the clips to be muted and for those allowed a picture without sound.
        let silenced = inputs.indices.map { inputs[$0].isMuted || (inputs[$0].soundMayBeMissing && clips[$0].lacksAudio(of: clips[0])) }
        if reason == nil, let quiet = silenced.firstIndex(of: true) {
            do {
                silence = try clips[0].audio.map { try SilentPacket(matching: $0) }
            } catch let needed as Incompatibility {
                reason = Incompatibility("\(clips[quiet].label) \(inputs[quiet].isMuted ? "is to be muted" : "has no audio"), but \(needed.message)",
                                         hint: needed.hint)
            }
        }
        // FLAC is joined by decoding and encoding again, which loses nothing (it is lossless):
        // a copy would keep clip 1's STREAMINFO, its sample count and checksum, for the whole.
        // (Clips of one sound-only FLAC recording: the same tracks, sample rate and channels.)
        let losslessJoin = clips.allSatisfy { clip in
            clip.video == nil && clip.audio.count == clips[0].audio.count && !clip.audio.isEmpty
                && zip(clip.audio, clips[0].audio).allSatisfy { a, b in
                    a.audioCodec == .flac && b.audioCodec == .flac && a.sampleRate == b.sampleRate && a.channels == b.channels
                }
        } && container.canHold(AudioCodec.flac)
        if losslessJoin {
            reason = Incompatibility("FLAC is joined by re-encoding it, losslessly: a copy would keep clip 1's STREAMINFO "
                                     + "(its sample count and checksum)", hint: "nothing to do")
        }
        if let reason, !options.allowsReencoding && !losslessJoin {
            throw ReelError(.incompatibleClips, reason.message, hint: reason.hint)
        }

        let temporary = FilePlacement.temporaryURL(beside: output, purpose: "merging")
        let tracked = UnfinishedCopies.track(temporary)  // a copy: an interrupted command removes it
        defer { tracked.done() }
        let sizes = clips.map(\.fileSize)
        let meter = ProgressMeter(stage: reason == nil ? .merging : .reencoding, total: sizes.reduce(0, +), clock: HostClock(),
                                  handler: progress)
        do {
            var duration = MediaTime.zero
            var frames: Int64 = 0
            var leftOut: [MergeSummary.PacketsLeftOut] = []
            var pastTheEnd: [Chapter] = []
            if reason == nil {
                do {
                    (duration, frames, leftOut, pastTheEnd) = try remux(clips, inputs: inputs, silence: silence, silenced: silenced, to: temporary, container: container,
                                                   reserve: indexReservation.map { $0 > 0 ? $0 : nil }
                                                       ?? Self.indexReservation(for: clips, container: container,
                                                                                withChapters: inputs.contains { !$0.chapters.isEmpty } || clips.contains { $0.chapterCount > 0 }),
                                                   meter: meter, sizes: sizes)
                } catch let needed as Incompatibility {
                    try? FileManager.default.removeItem(at: temporary)
                    guard options.allowsReencoding else {
                        throw ReelError(.incompatibleClips, needed.message, hint: needed.hint)
                    }
                    reason = needed
                }
            }
            if reason != nil {
                (duration, frames, leftOut, pastTheEnd) = try reencode(clips, inputs: inputs, to: temporary, container: container, meter: meter, sizes: sizes)
            }
            try beforePlacing?(temporary, leftOut)
            try FilePlacement.place(temporary, at: output, replacing: options.overwrite, what: "the merged file")
            let bytes = ((try? FileManager.default.attributesOfItem(atPath: output.path))?[.size] as? NSNumber)?.int64Value ?? 0
            meter.finish()
            var summary = MergeSummary(url: output, duration: duration, clipCount: clips.count, videoFrames: frames,
                                       reencodedClips: reason == nil ? [] : Array(clips.indices), reencodingReason: reason?.message,
                                       bytes: bytes, packetsLeftOut: leftOut)
            summary.leftOutMarkers = pastTheEnd
            return summary
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            if let needed = error as? Incompatibility {
                throw ReelError(.incompatibleClips, needed.message, hint: needed.hint)
            }
            if var failure = error as? ReelError, failure.code == .insufficientStorage {
                // The writer's hint names its file, which is gone: nothing of the merge is left.
                failure.hint = "free some disk space and merge again; the clips are unchanged"
                throw failure
            }
            throw error
        }
    }

    // MARK: The output file

    /// Refuses an output that exists (unless `overwrite`), is a folder, or is one of the clips.
    private static func checkOutput(_ output: URL, overwrite: Bool, inputs: [MergeInput]) throws {
        var target = stat()
        guard stat(output.path, &target) == 0 else { return }  // does not exist yet: the folder is checked on creation
        if (target.st_mode & S_IFMT) == S_IFDIR {
            throw ReelError(.fileExists, "\(output.path) is a folder", hint: LibraryHint.giveTheMergeAFileName)
        }
        for (i, input) in inputs.enumerated() {
            if FileIdentity(input.url) == FileIdentity(target) {
                throw ReelError(.invalidConfiguration, "the output \(output.path) is clip \(i + 1) (\(input.url.lastPathComponent)) itself",
                                hint: "write the merged file under a new name")
            }
        }
        if !overwrite {
            throw ReelError(.fileExists, "\(output.path) already exists", hint: LibraryHint.allowOverwriting)
        }
        // Replacing is a rename, which no lock stops: a recording in progress is refused here.
        try RecordingLock.checkNotBeingWritten(output)
    }

    private static func checkContainer(_ container: Container, holds clip: ClipFacts, output: URL) throws {
        for stream in clip.streams {
            let fits: Bool
            if stream.kind == .video, let codec = stream.videoCodec {
                fits = container.canHold(codec)
            } else if stream.kind == .audio, let codec = stream.audioCodec {
                fits = container.canHold(codec)
            } else {
                fits = true  // libavformat decides when the header is written
            }
            if !fits {
                throw ReelError(.unsupportedFormat, "\(container.rawValue) files cannot hold the \(stream.codecLabel) of \(clip.label)",
                                hint: "merge into an .mkv file")
            }
        }
    }

    // MARK: Joining by copying packets

    private static func remux(_ clips: [ClipFacts], inputs: [MergeInput], silence: [SilentPacket?], silenced: [Bool], to url: URL,
                              container: Container, reserve: Int?, meter: ProgressMeter, sizes: [Int64]) throws -> (MediaTime, Int64, [MergeSummary.PacketsLeftOut], [Chapter]) {
        var reserve = reserve
        meter.update(completed: 0)
        while true {
            do {
                var join: CopyingJoiner?
                for (i, clip) in clips.enumerated() {
                    // What the copy needs of later clips is known from probing them.
                    let input = try clip.open(readsStreamInfo: i == 0)
                    if join == nil {
                        join = try CopyingJoiner(url: url, container: container, first: clip, input: input, reservedIndexSize: reserve)
                    }
                    try join!.append(clip, from: input, isFirst: i == 0, silence: silenced[i] ? silence : nil,
                                     meter: meter, readBefore: sizes[..<i].reduce(0, +), chapters: inputs[i].chapters)
                }
                try join!.finish()
                return (join!.offset, join!.videoPackets, join!.packetsLeftOut, join!.chaptersPastTheEnd)
            } catch is IndexReservationTooSmall {
                // Never expected (the estimate is an upper bound), but then: the usual way.
                try? FileManager.default.removeItem(at: url)
                reserve = nil
            }
        }
    }

    /// The space to reserve for an MP4/MOV index at the front of the file, or `nil` to move the
    /// index there when the file is complete (libavformat's `faststart`, which reads and writes
    /// the whole file once more).
    ///
    /// The reservation is an upper bound from the clips' packet counts: the index needs at most
    /// 48 bytes a packet (sample size, time, composition offset, sync and dependency flags,
    /// chunk offset and chunk table entries, all at their worst) and the headers. The unused
    /// part stays as a `free` box; it is worth it when that is a small part of the file, which
    /// is when the second pass costs most.
    ///
    /// `withChapters`: the file gets chapters, which go into the index afterwards (see
    /// ``MP4ChapterList``): the reservation is then made whatever the file's size, with room
    /// for the longest chapter list.
    static func indexReservation(for clips: [ClipFacts], container: Container, withChapters: Bool = false) -> Int? {
        guard container.isISOBaseMedia else { return nil }
        var packets: Int64 = 0, bytes: Int64 = 0, headers: Int64 = 64 * 1024
        for clip in clips {
            for stream in clip.streams {
                guard stream.packetCount > 0 else { return nil }
                packets += stream.packetCount
            }
            var s = stat()
            guard stat(clip.url.path, &s) == 0 else { return nil }
            bytes += Int64(s.st_size)
        }
        headers += clips[0].streams.reduce(0) { $0 + Int64($1.extradata.count) }
        let bound = 48 * packets + headers
        if withChapters { return Int(bound) + MP4ChapterList.largestBox }
        return bound * 100 <= bytes ? Int(bound) : nil
    }

    // MARK: Joining by re-encoding

    private static func reencode(_ clips: [ClipFacts], inputs: [MergeInput], to url: URL, container: Container,
                                 meter: ProgressMeter, sizes: [Int64]) throws -> (MediaTime, Int64, [MergeSummary.PacketsLeftOut], [Chapter]) {
        meter.restart(as: .reencoding, total: sizes.reduce(0, +))
        let join = try ReencodingJoiner(url: url, container: container, clips: clips)
        do {
            for (i, clip) in clips.enumerated() {
                try join.append(clip, from: try clip.open(), muted: inputs[i].isMuted, meter: meter, readBefore: sizes[..<i].reduce(0, +),
                                chapters: inputs[i].chapters)
            }
            let summary = try join.finish()
            return (join.offset, summary.videoFrames, join.packetsLeftOut, join.chaptersPastTheEnd)
        } catch {
            join.abandon()
            throw error
        }
    }
}
