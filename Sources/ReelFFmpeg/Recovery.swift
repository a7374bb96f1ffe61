import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// Recordings cut off by a crash, a kill, a power loss or a full disk: how to tell them and how
/// to make them into finalised files.
///
/// While recording, MP4 and MOV files are fragmented: an empty index at the front, then
/// self-contained fragments. A clean stop makes such a file a regular one, so a file that
/// still has fragments was cut off. So was a file whose finalising in place was interrupted
/// (see ``AssetWriter/Finalisation``): it plays, and recovering it completes the finalise. An
/// MKV is cut off when its Segment has no size (a clean stop writes the size, the duration and
/// the index of cues): it plays, but players cannot tell its length or seek well.
///
/// A file that a recorder is writing right now looks the same, but its writer holds a lock on
/// it (see `RecordingLock`): such a file is not counted as cut off, and is not recovered.
///
/// Everything that was completely written is kept: the complete fragments, and of a fragment
/// whose media data was cut short the samples whose bytes are all on the disk (see
/// `TornFragment`); a fragment whose header was cut short holds nothing whole (an MKV keeps
/// the blocks that are complete). Nothing else is lost: the original is replaced only by a
/// complete, finalised file, which is on the disk before it takes its place.
public enum Recovery {
    /// What a recovery produced.
    public struct Summary: Sendable, Hashable {
        /// The finalised file (the recording itself when recovered in place).
        public var url: URL
        /// The duration the finalised file holds.
        public var duration: MediaTime
        /// The video frames the finalised file holds.
        public var videoFrames: Int64
        /// How the file was made a regular one: in place (its fragment headers blanked, or an
        /// interrupted finalise completed) or by copying; `.notNeeded` if it was complete
        /// already (then nothing was written).
        public var finalisation: AssetWriter.Finalisation
        /// The bytes at the end of the recording left out: what a crash or a full disk cut
        /// short (a fragment's header, or a frame or sound packet whose end is missing).
        public var leftOutBytes: Int64 = 0
        /// The video frames of a fragment cut short that were whole and are kept.
        public var keptFramesOfCutFragment: Int64 = 0
        /// The video frames of a fragment cut short that are left out, their bytes not all on
        /// the disk; `nil` when the fragment's header was cut short too, so that nothing tells
        /// how many it held.
        public var leftOutFrames: Int64?
        /// The markers placed before the recording was cut off that the finalised file does not
        /// hold as chapters, in time order: those at or past its end (placed just before the
        /// crash, their media never written), or all of them when the file's kind holds no
        /// chapters.
        public var leftOutMarkers: [Chapter] = []
        /// The list of markers kept beside the recording (a hidden `.NAME.chapters` file), kept
        /// there because the file could not take them: an MKV ended where it is on a full disk
        /// gets no chapters (they would need room). It holds ``leftOutMarkers``; `nil` when
        /// the list went (the file holds what it can) or there was none.
        public var keptMarkerList: URL?

        /// The summary with what the cut-off `layout` leaves out.
        fileprivate func leavingOut(_ layout: RecordingStructure.Fragments) -> Summary {
            var done = self
            done.leftOutBytes = layout.leftOutBytes
            if let torn = layout.torn {
                done.keptFramesOfCutFragment = Int64(torn.keptFrames)
                done.leftOutFrames = Int64(torn.listedFrames - torn.keptFrames)
            }
            return done
        }
    }

    /// Whether `url` is a recording that was cut off before its clean stop and holds something
    /// to recover: an MP4/MOV with a complete fragment or a whole sample, or an interrupted finalise,
    /// or an MKV whose Segment has no size. A file that a recorder is writing right now counts
    /// as cut off here; ``cutOffRecordings(in:)`` leaves such files out.
    public static func isCutOff(_ url: URL) -> Bool {
        // Only regular files: opening a FIFO would wait for a writer, a device would be read.
        var info = stat()
        guard stat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return false }
        if AudioFileRecovery.kind(of: url) != nil { return AudioFileRecovery.isCutOff(url) }
        switch (try? RecordingStructure.inspect(url)) ?? .notARecording {
        case .fragmented: return true
        case .interruptedFinalise, .cutOffMatroska: return true
        case .complete, .emptyFragmented, .notARecording, .cutShortAfterFinishing: return false
        }
    }

    /// Whether `url` is the start of a recording that holds nothing recorded yet: an empty
    /// file, an MP4/MOV with its header and no complete fragment, an MKV with its header and no
    /// cluster, a WAV/FLAC/Ogg file with no whole audio frame. Anything else (another kind of
    /// file, a damaged one, one that holds media) is not.
    public static func holdsNothingRecorded(_ url: URL) -> Bool {
        var info = stat()
        guard stat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return false }
        if info.st_size == 0 { return true }
        if AudioFileRecovery.kind(of: url) != nil {
            do { _ = try AudioFileRecovery.plan(url); return false } catch { return (error as? ReelError)?.code == .nothingRecorded }
        }
        guard let file = FileHandle(forReadingAtPath: url.path) else { return false }
        defer { try? file.close() }
        guard let head = try? file.read(upToCount: 1 << 20), head.count >= 8 else { return false }
        if head.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) {
            // Matroska: libavformat writes each cluster whole; the header alone is a few kilobytes.
            return head.count < 1 << 20 && head.range(of: Data([0x1F, 0x43, 0xB6, 0x75])) == nil
        }
        return (try? RecordingStructure.inspect(url)) == .emptyFragmented
    }

    /// Whether `url` is a finished recording: an MP4/MOV with its index, or an MKV whose
    /// Segment has its size (told from the structure alone, as ``isCutOff(_:)`` is).
    public static func isFinished(_ url: URL) -> Bool {
        var info = stat()
        guard stat(url.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return false }
        if AudioFileRecovery.kind(of: url) != nil { return (try? AudioFileRecovery.plan(url))?.isNeeded == false }
        return (try? RecordingStructure.inspect(url)) == .complete
    }

    /// Whether a recorder (of this program or another) is writing the file at `url` right now:
    /// its writer holds a lock on it from its creation until it is finalised.
    public static func isBeingRecorded(_ url: URL) -> Bool {
        RecordingLock.isBeingWritten(url)
    }

    /// The recordings in `folder` that were cut off (MP4, MOV and MKV files; see
    /// ``isCutOff(_:)``), leaving out those that another recorder is writing right now.
    public static func cutOffRecordings(in folder: URL) -> [URL] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().compactMap { name in
            let url = folder.appendingPathComponent(name)
            guard ["mp4", "mov", "m4v", "mkv", "webm", "m4a", "ogg", "opus", "oga", "flac", "wav"].contains(url.pathExtension.lowercased()), !name.hasPrefix(".") else { return nil }
            return isCutOff(url) && !RecordingLock.isBeingWritten(url) ? url : nil
        }
    }

    /// Makes the cut-off recording at `url` into a finalised file with everything it completely
    /// held: at `output`, or in place when `output` is `nil`.
    ///
    /// In place, an MP4/MOV with space reserved for its index gets the index written there (no
    /// copy of its media data; every step leaves a file that plays); otherwise the original is
    /// replaced only once a finalised copy is complete and on the disk. A file whose finalising
    /// was interrupted is finished where it stopped. A link is followed: the file it points to
    /// is recovered.
    ///
    /// `output` may be a folder (the recovered file takes the recording's name in it); its
    /// extension chooses the container (`.mp4`, `.mov`, `.mkv`; none keeps the recording's). It
    /// must not exist unless `overwrite`, and may never be the recording itself (under any
    /// name); the recording is only read then.
    ///
    /// A complete file needs nothing: the summary says `.notNeeded` and nothing is written.
    ///
    /// `progress` hears how far the recovery has come (bytes of the recording read, when its
    /// packets are copied; a finalise in place reports its start and end), on the calling
    /// thread, a few times a second.
    ///
    /// - Throws: `ReelError` with `.busy` (a recorder is writing the file right now),
    ///   `.nothingRecorded` (cut off before anything was completely written), `.invalidMedia`
    ///   (not an MP4, MOV or MKV recording, or damaged), `.invalidConfiguration` (the output is
    ///   the recording), `.unsupportedFormat` (an output extension that is not a container),
    ///   `.fileExists`, `.permissionDenied`, `.insufficientStorage`, `.ioFailure`.
    public static func recover(_ url: URL, to output: URL? = nil, overwrite: Bool = false,
                               progress: (@Sendable (WorkProgress) -> Void)? = nil) throws -> Summary {
        FFmpeg.silenceLibraryLogging()
        if url.pathExtension.lowercased() != "gif" { try checkReadableFile(url) }
        let meter = ProgressMeter(stage: .recovering, total: size(of: url), clock: HostClock(), handler: progress)
        meter.update(completed: 0)
        let summary = try recover(url, to: output, overwrite: overwrite, meter: meter)
        meter.finish()
        return summary
    }

    private static func recover(_ url: URL, to output: URL?, overwrite: Bool, meter: ProgressMeter) throws -> Summary {
        // A GIF recording cut off is its intermediate, made into the GIF.
        if let gif = try recoverGIF(url, to: output, overwrite: overwrite, meter: meter) { return gif }
        // Any other recording recovered into a GIF: into a GIF's intermediate, then made into it.
        if let output, output.pathExtension.lowercased() == "gif", !isFolder(output) {
            return try recoverIntoGIF(url, gif: output, overwrite: overwrite, meter: meter)
        }
        return try recoverRecording(url, to: output, overwrite: overwrite, meter: meter)
    }

    /// Finalises the cut-off recording `url` where it is, as the recording it is (a GIF
    /// recording's intermediate as the MP4 it is, never made into the GIF): what a recorder
    /// whose disk filled does with its own file. `held`: the lock its writer holds on it, kept
    /// while it is finalised (an abort finds the file open), whose gate the finalise's steps go
    /// through as at a stop (an abort waits for the step under way; see ``FinaliseGate``).
    ///
    /// - Throws: ``FinaliseGate/GivenUp`` when an abort gave the finalise up.
    package static func finaliseInPlace(_ url: URL, held: RecordingLock? = nil) throws -> Summary {
        try recoverRecording(url, to: nil, overwrite: false, meter: ProgressMeter(stage: .recovering, total: size(of: url), clock: HostClock(), handler: nil),
                             held: held)
    }

    /// Recovers `url` as the recording it is (a GIF's intermediate as the MP4 it is); `held`
    /// (in place only): its writer's lock (see ``finaliseInPlace(_:held:)``).
    static func recoverRecording(_ url: URL, to output: URL?, overwrite: Bool, meter: ProgressMeter, held: RecordingLock? = nil) throws -> Summary {
        // The recording itself, not a link to it: a finalised copy takes the file's place.
        let source = url.resolvingSymlinksInPath()
        let destination = try output.map { try Destination(output: $0, recording: source, overwrite: overwrite) }
        // Held while recovering: exclusively when the file is changed in place, shared when it
        // is only read. Either is refused while a recorder writes the file (unless it is the
        // writer's own lock, and its gate, that are given).
        let lock = try held == nil ? RecordingLock.lockExisting(source, exclusive: destination == nil) : nil
        defer { lock?.release() }
        let gate = destination == nil ? held?.finaliseGate : nil
        if let kind = AudioFileRecovery.kind(of: source) {
            return try recoverSound(source, kind: kind, to: destination, gate: gate)
        }
        let state = try RecordingStructure.inspect(source)
        // The markers kept beside it, to tell which of them the recovered file holds.
        let keptList = ChapterSidecar.kept(for: source)
        let markers = keptList?.chapters ?? []
        do {
            if let destination {
                return try leavingOut(markers, from: recover(source, state: state, to: destination, meter: meter))
            }
            let recovered = try leavingOut(markers, from: recoverInPlace(source, state: state, meter: meter, gate: gate))
            // Its markers are in it now (those it can hold); a file that could take none keeps
            // them beside it.
            if recovered.keptMarkerList == nil, let keptList { ChapterSidecar.remove(list: keptList.url) }
            return recovered
        } catch let error as ReelError where destination == nil && error.code == .permissionDenied {
            throw ReelError(.permissionDenied, "cannot finalise \(source.path) where it is: \(error.message)",
                            hint: LibraryHint.recoverIntoWritableFolder,
                            errno: error.errno, averror: error.averror)
        } catch let error as ReelError where error.code == .insufficientStorage {
            // The recording is as it was; a copy of it needs about as much space as it takes.
            throw ReelError(.insufficientStorage, "no space left to recover \(source.path): \(error.message)",
                            hint: LibraryHint.recoverToAnotherDisk,
                            errno: error.errno, averror: error.averror)
        }
    }

    /// `summary` with those of `markers` (kept beside the recording) that its file does not hold
    /// as chapters: the file keeps them in time order, the first of them (those before its end).
    private static func leavingOut(_ markers: [Chapter], from summary: Summary) throws -> Summary {
        guard !markers.isEmpty, summary.finalisation != .notNeeded else { return summary }
        let held = try InputFile(url: summary.url).chapters().count
        var done = summary
        done.leftOutMarkers = Array(markers.sorted { $0.start < $1.start }.dropFirst(held))
        return done
    }

    // MARK: In place

    /// `gate`: the file's (see ``FinaliseGate``), through which each change to it goes.
    private static func recoverInPlace(_ url: URL, state: RecordingStructure.State, meter: ProgressMeter, gate: FinaliseGate?) throws -> Summary {
        // The markers placed before the recording was cut off (a single file's are kept beside it).
        let kept = ChapterSidecar.kept(for: url)
        let markers = kept.map(\.chapters).flatMap { $0.isEmpty ? nil : $0 }
        switch state {
        case .complete:
            return try summary(of: url, finalisation: .notNeeded)
        case .interruptedFinalise:
            // Its new index is complete and in force (or about to be): finish the steps.
            let bytes = try MP4Finaliser.resume(url) ?? 0
            return try summary(of: url, finalisation: .inPlace(bytesWritten: bytes))
        case .fragmented(let layout):
            let container = isoContainer(of: url)
            let shift = try firstVideoTime(url, view: layout.readingView) ?? .zero
            if let view = layout.readingView {
                do {
                    // The fragment cut short stands in the way of finalising in place: copy what
                    // is whole (the original stays as it is until the copy takes its place).
                    let copy = try write(url, view: view, shift: shift, to: Destination(replacing: url, container: container), meter: meter,
                                         chapters: markers, gate: gate)
                    return try summary(of: url, finalisation: .copied(reason: "its last fragment was cut short", bytesWritten: size(of: url)),
                                       videoPackets: copy.videoPackets).leavingOut(layout)
                } catch let error as ReelError where error.code == .insufficientStorage {
                    // No room for the copy: the disk that cut the recording short is still
                    // full. A torn fragment is made a whole one of its whole samples, or a
                    // fragment with nothing whole is cut off the end of the file; the file is
                    // then finalised in place, its index going into the space reserved for it:
                    // no space needed.
                    let cut = { () throws in
                        if let torn = layout.torn {
                            try torn.apply(to: url)
                        } else {
                            try Syscall.call(orThrow: { Syscall.fileError($0, at: url, action: "shorten") }) {
                                truncate(url.path, off_t(layout.completeLength))
                            }
                        }
                    }
                    if let gate { try gate.step(cut) } else { try cut() }
                    let finalisation = try AssetWriter.finalise(url, container: container, shift: shift, inPlace: true, copyWhenSmall: false,
                                                                fault: nil, chapters: markers ?? [], gate: gate)
                    return try summary(of: url, finalisation: finalisation).leavingOut(layout)
                }
            }
            // The writer started every track at one lead time and FFmpeg moved the file so that
            // the first packet decodes at zero; the first video frame's time is that lead.
            let finalisation = try AssetWriter.finalise(url, container: container, shift: shift, inPlace: true, copyWhenSmall: true,
                                                        fault: nil, chapters: markers ?? [], gate: gate)
            return try summary(of: url, finalisation: finalisation)
        case .cutOffMatroska:
            do {
                let copy = try write(url, view: nil, shift: .zero, to: Destination(replacing: url, container: matroskaContainer(of: url)), meter: meter,
                                     chapters: markers, gate: gate)
                return try summary(of: url, finalisation: .copied(reason: "an MKV is finalised by copying it", bytesWritten: size(of: url)),
                                   videoPackets: copy.videoPackets)
            } catch let error as ReelError where error.code == .insufficientStorage {
                // No room for the copy (the disk that cut the recording short is still full):
                // ended where it is, without the index of cues, which needs no room.
                do {
                    // No room for chapters either: the markers stay in their list beside it.
                    var ended = try endMatroskaInPlace(url, gate: gate)
                    if markers != nil { ended.keptMarkerList = kept?.url }
                    return ended
                } catch let damage as ReelError where damage.code == .invalidMedia {
                    // Damaged before its end, it is left as it is: only the copy keeps what
                    // follows the damage, and it needs room.
                    throw ReelError(.insufficientStorage, "\(error.message); nor can it be ended where it is: \(damage.message)",
                                    errno: error.errno, averror: error.averror)
                }
            }
        case .emptyFragmented:
            throw nothingRecorded(url)
        case .notARecording:
            throw notARecording(url)
        case .cutShortAfterFinishing:
            throw cutShortAfterFinishing(url)
        }
    }

    // MARK: Into another file

    private static func recover(_ url: URL, state: RecordingStructure.State, to destination: Destination, meter: ProgressMeter) throws -> Summary {
        let container = destination.container
        let kept = ChapterSidecar.read(for: url)
        let markers = kept.isEmpty ? nil : kept
        switch state {
        case .complete:
            return try summary(of: url, finalisation: .notNeeded)
        case .interruptedFinalise:
            // Finished on a copy, then (for another container) copied once more.
            let copy = FilePlacement.temporaryURL(beside: destination.url, purpose: "recovering", pathExtension: url.pathExtension)
            let tracked = UnfinishedCopies.track(copy)  // a copy: an interrupted command removes it
            defer { tracked.done() }
            defer { try? FileManager.default.removeItem(at: copy) }
            do {
                try FileManager.default.copyItem(at: url, to: copy)
            } catch {
                throw ReelError(.ioFailure, "cannot copy \(url.path) beside \(destination.url.path): \(error.localizedDescription)")
            }
            let lock = try RecordingLock.lockExisting(copy, exclusive: true)
            defer { lock.release() }
            let bytes = try MP4Finaliser.resume(copy) ?? 0
            if container == isoContainer(of: url) {
                try FilePlacement.place(copy, at: destination.url, replacing: destination.overwrite, what: "the recovered file")
                return try summary(of: destination.url, finalisation: .inPlace(bytesWritten: bytes))
            }
            let written = try write(copy, view: nil, shift: .zero, to: destination, meter: meter)
            return try summary(of: destination.url, finalisation: .copied(reason: "written to another file", bytesWritten: size(of: destination.url)),
                               videoPackets: written.videoPackets)
        case .fragmented(let layout):
            let shift = try firstVideoTime(url, view: layout.readingView) ?? .zero
            let written = try write(url, view: layout.readingView, shift: shift, to: destination, meter: meter, chapters: markers)
            return try summary(of: destination.url, finalisation: .copied(reason: "written to another file", bytesWritten: size(of: destination.url)),
                               videoPackets: written.videoPackets).leavingOut(layout)
        case .cutOffMatroska:
            let written = try write(url, view: nil, shift: .zero, to: destination, meter: meter, chapters: markers)
            return try summary(of: destination.url, finalisation: .copied(reason: "written to another file", bytesWritten: size(of: destination.url)),
                               videoPackets: written.videoPackets)
        case .emptyFragmented:
            throw nothingRecorded(url)
        case .notARecording:
            throw notARecording(url)
        case .cutShortAfterFinishing:
            throw cutShortAfterFinishing(url)
        }
    }

    /// Copies the packets of `url` into a temporary file beside the destination, which takes
    /// the destination's name once it is complete and on the disk; locked as being written
    /// until then. A copy without a single complete video frame (of a recording with video),
    /// or without any packet, is not a recovery: it is removed, and nothing is replaced.
    /// `chapters`: those kept beside a cut-off recording (else the file's own). `gate`: the
    /// recording's (see ``FinaliseGate``), when the copy takes its place.
    private static func write(_ url: URL, view: FileView?, shift: MediaTime, to destination: Destination,
                              meter: ProgressMeter, chapters: [Chapter]? = nil, gate: FinaliseGate? = nil) throws -> Remuxer.Copy {
        let temporary = FilePlacement.temporaryURL(beside: destination.url, purpose: "recovering")
        let tracked = UnfinishedCopies.track(temporary)  // a copy: an interrupted command removes it
        defer { tracked.done() }
        let copy: Remuxer.Copy
        do {
            copy = try Remuxer.copyPackets(of: url, view: view, to: temporary, container: destination.container,
                                           fastStart: true, overwrite: false, shift: shift, meter: meter,
                                           chapters: chapters.flatMap { destination.container.holdsChapters ? $0 : nil })
        } catch var error as ReelError {
            try? FileManager.default.removeItem(at: temporary)
            // The user knows the file they named, not the hidden copy it is written as.
            error.message = error.message.replacingOccurrences(of: temporary.path, with: destination.url.path)
            error.hint = error.hint?.replacingOccurrences(of: temporary.path, with: destination.url.path)
            throw error
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        defer { copy.lock?.release() }
        guard copy.packets > 0, !copy.hasVideo || copy.videoPackets > 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw nothingRecorded(url)
        }
        do {
            let place = { try FilePlacement.place(temporary, at: destination.url, replacing: destination.overwrite, what: "the recovered file") }
            if let gate { _ = try gate.placingStep { try place(); return destination.url } } else { try place() }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        return copy
    }

    // MARK: Helpers

    /// WebM for a `.webm` file, else MKV.
    private static func matroskaContainer(of url: URL) -> Container {
        url.pathExtension.lowercased() == "webm" ? .webm : .mkv
    }

    /// MOV for a `.mov` file, M4A for an `.m4a`, else MP4.
    private static func isoContainer(of url: URL) -> Container {
        switch url.pathExtension.lowercased() {
        case "mov": return .mov
        case "m4a": return .m4a
        default: return .mp4
        }
    }

    private static func size(of url: URL) -> Int64 {
        var info = stat()
        return stat(url.path, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// What the recovered (or complete) file at `url` holds. `videoPackets` counts the frames
    /// where the container does not (MKV).
    static func summary(of url: URL, finalisation: AssetWriter.Finalisation, videoPackets: Int64? = nil) throws -> Summary {
        let probe = try InputFile(url: url)
        var duration = MediaTime.zero
        var frames: Int64 = 0
        for i in 0..<Int(probe.context.pointee.nb_streams) {
            let stream = probe.context.pointee.streams[i]!
            let tb = stream.pointee.time_base
            if stream.pointee.duration > 0 && stream.pointee.duration != FFmpeg.noPTS {
                duration = max(duration, MediaTime(ticks: stream.pointee.duration, tb))
            }
            if stream.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO { frames = stream.pointee.nb_frames }
        }
        let whole = probe.context.pointee.duration
        if duration == .zero, whole > 0, whole != FFmpeg.noPTS {
            duration = MediaTime(ticks: whole, AVRational(num: 1, den: AV_TIME_BASE))
        }
        return Summary(url: url, duration: duration, videoFrames: videoPackets ?? frames, finalisation: finalisation)
    }
}
