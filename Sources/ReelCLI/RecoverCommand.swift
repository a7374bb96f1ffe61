import Foundation
import Reel

/// `reel recover FILE…`: makes recordings cut off by a crash into finalised files.
struct RecoverCommand {
    let console: Console

    static let specs: [OptionSpec] = [
        OptionSpec("output", short: "o", value: .required, placeholder: "FILE|FOLDER", completion: .file,
                   help: "write the finalised file here (default: in place); a folder takes any number of files"),
        OptionSpec("overwrite", help: "replace the file it writes (the -o file, or the one the clips were recorded for) if it exists; a symbolic link is followed (the file it leads to is replaced, the link stays); the recording recovered is never replaced"),
        OptionSpec("json", help: "print progress and each result as JSON lines on standard output"),
        OptionSpec("help", short: "h", help: "show this help"),
    ]

    static let help = """
    Usage: reel recover FILE… [-o FILE|FOLDER] [--overwrite] [--json]
           reel recover NAME.gif [-o FILE.gif] [--overwrite] [--json]
           reel recover NAME.clips [-o FILE] [--json]
           reel recover HLS-FOLDER|PLAYLIST.m3u8 [--json]

    Makes recordings that were cut off (a crash, a kill, a power loss, a full disk) into
    finalised files with everything they completely held: an MP4's or MOV's complete fragments
    and every whole frame of a fragment cut short (only a frame whose end is missing is left
    out), an MKV's complete blocks. A recording writes a fragment (MKV, WebM: a cluster; Ogg: a
    page) every half second, and the encoder holds about half a second more, so a kill loses
    about the last second; what is recorded while paused is written at the pause.

    Without -o each file is finalised in place: an MP4 or MOV gets its index written into the
    space kept for it at the front where there is room (no copy of the media data; a file
    interrupted while being finalised is finished); else the file is replaced by a finalised
    copy, only once that is complete. With -o the recording is only read; -o FOLDER keeps each
    file's name, and the extension of -o FILE chooses the format (.mp4, .mov, .mkv or .webm;
    .gif makes the recovered recording into an animated GIF).

    Chapter markers placed before the cut (kept beside the file as .NAME.chapters, found by
    the file they belong to: a cut-off file renamed in its folder keeps them) become the
    recovered file's chapters. A marker placed after the last of the media that could be
    recovered (just before a kill) is left out and said (--json: "leftOutMarkers"), in a
    clips folder's merge too. An MKV
    ended where it is on a full disk has no room for chapters: its markers stay in the list
    beside it, and that is said (--json: "markerList").

    A GIF recording (-o NAME.gif) is recorded into a hidden MP4 beside it, .NAME.gif-….mp4,
    and made into the GIF at the stop. One that was cut off (killed, or its conversion
    failed) is that file: give NAME.gif (or the hidden file) and it is finalised, made into
    the GIF, and removed once the GIF is complete. The GIF never replaces a file there unless
    --overwrite is given.

    Sound-only files: an M4A is recovered as an MP4. A WAV gets its RIFF and data sizes, a
    FLAC its STREAMINFO (total samples, frame sizes; frames checked by their CRCs) and an Ogg
    (.ogg, .opus) its end-of-stream page; a torn last frame or page is cut off. These stay of
    their kind with -o (a WAV is recovered into a .wav).

    An MP4 or MOV is cut off when it still has fragments (a clean stop turns them into a
    regular file). An MKV is cut off when its Segment has no size, which a clean stop writes
    along with its duration and its index of cues: it plays, but players cannot tell its
    length or seek in it. A complete file needs nothing, and a file that another program is
    recording right now is left alone.

    An HLS stream into a folder (--hls DIR) that was cut off has a playlist without its end:
    players wait for more segments for ever. Give the folder (or its index.m3u8): every whole
    segment stays listed, a whole segment written but not listed yet is added, a segment that
    is missing or cut short is left out (its file stays; the segments after it stay, from a
    discontinuity, and the exit status is 3), and the playlist gets its end. The
    segment that was being made when it was cut off was never written (FFmpeg keeps it in
    memory until it ends): the recording's file (-o) holds that time. A folder whose playlist
    is empty or missing (a full disk before Reel kept the playlist whole, a playlist deleted)
    while its segments are there gets its playlist rebuilt from the whole segments, in order
    (a torn one is left out and left as it is); nothing is removed while segments are there.

    A recording in --pause-mode clips that was cut off is in its clips folder (NAME.clips
    beside NAME.mp4, or the --keep-clips folder): give the folder, or NAME.mp4 if that does
    not exist. The clips are finalised and merged into NAME.mp4 (or -o OUT), never over an
    existing file, and removed once it holds every frame of them (kept with --keep-clips).
    A clip the recording finished that is no longer in the folder is said by name, and the
    folder is then kept as it was (put the clip back and recover again with --overwrite). A
    folder copied, moved or renamed is merged beside itself (copy.clips into copy.mp4).

    Leftovers: an unfinished copy that an interrupted finalise, recovery, GIF making or merge
    left under a hidden name (.NAME.finalising-PID-…) is removed once what it copied is complete
    and the process that made it is gone, and that is said (--json: "removedLeftovers"); others
    are pointed out ("leftovers"). A recording cut off under a hidden name before it could
    replace NAME (--overwrite: .NAME.new-…) is pointed out with how to recover it
    ("hiddenRecordings"), never removed. Interrupted, recover says so (--json: "interrupted").

    Exit status: 0 when every file given was recovered (or needed nothing); 3 when a clips
    folder was merged but a clip it lists is missing (deleted or moved away: the file lacks
    what it held; --json says "complete": false and "missingClips"), or an HLS playlist was
    closed without a segment it listed; 1 when one could not be recovered; 2 for a usage error.

    """

    func run(_ args: ParsedArguments) -> Int32 {
        let files = args.positionals
        guard !files.isEmpty else {
            console.err("reel: recover needs a file")
            return 2
        }
        let output = (args.value("output") ?? nil).map { URL(fileURLWithPath: $0) }
        if let path = args.value("output") ?? nil {
            // Reel writes regular files: not standard output, a device or a pipe.
            do {
                guard !path.isEmpty else { throw UsageError("-o needs a file name or a folder") }
                try OutputLocation.checkOutputPath(path, option: "-o", wanted: "a file name or a folder", allowsFolder: true)
            } catch let error as UsageError {
                console.err("reel: \(error.message)")
                return 2
            } catch {
                console.err("reel: error: \(Format.oneLine("\(CommandLineHints.rephrased(error))"))")
                return 1
            }
        }
        if let output, files.count > 1 {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: output.path, isDirectory: &isFolder), isFolder.boolValue else {
                console.err("reel: -o FILE works with one recording at a time; give a folder for several")
                return 2
            }
        }
        let json = args.has("json")
        var status: Int32 = 0
        var done: [FileIdentity] = []
        // The files this run wrote, and what each holds: --overwrite replaces files that were
        // there before, never the recovery of another recording given alongside.
        var written: [(file: FileIdentity, recording: String)] = []
        // What was given is never tidied away as a leftover (a hidden copy can be an input).
        let given = files.map { URL(fileURLWithPath: $0) }
        for path in files {
            let url = URL(fileURLWithPath: path)
            if let playlist = Self.playlist(toClose: url) {
                // An HLS stream into a folder that was cut off: its playlist has no end.
                let closed = closePlaylist(playlist, given: path, output: output, json: json)
                if closed != 0 && status != 1 { status = closed }
                continue
            }
            if let folder = RecordingSession.clipsFolder(toRecover: url) {
                // A clip-mode recording cut off before its clips were merged.
                let file = folder == url ? output : output ?? url
                if let recovered = recoverClips(in: folder, to: file, overwrite: args.has("overwrite"), json: json, given: given) {
                    if let identity = FileIdentity(recovered.url) { written.append((identity, path)) }
                    // Clips recorded and then gone: the file misses what they held.
                    if !recovered.missingClips.isEmpty && status == 0 { status = ExitStatus.incomplete }
                } else {
                    status = 1
                }
                continue
            }
            // The same file given twice (under another name, or through a link) is recovered once.
            if let identity = FileIdentity(url) {
                if done.contains(identity) { continue }
                done.append(identity)
            }
            if let output {
                let target = Recovery.outputLocation(recovering: url, to: output)
                if let taken = FileIdentity(target), let earlier = written.first(where: { $0.file == taken }) {
                    console.err("reel: error: \(path) would be recovered into \(target.path), which holds \(earlier.recording) recovered just now; "
                                + "\(path) is left as it was (recover it on its own with -o and another name or folder)")
                    status = 1
                    continue
                }
            }
            let progress = WorkProgressView(console: console, json: json, subject: url.lastPathComponent)
            defer { progress.finish() }
            do {
                let summary = try Recorder.recover(url, to: output, overwrite: args.has("overwrite"), progress: progress.handler)
                progress.finish()
                if summary.finalisation != .notNeeded, let file = FileIdentity(summary.url) { written.append((file, path)) }
                if json {
                    var object = Self.json(summary, of: url)
                    // The unfinished copies an interrupted finalise or recovery left beside it.
                    let (removed, kept) = LeftoverCopies.tidy(LeftoverCopies.beside(summary.url, or: url), inputs: given)
                    if !kept.isEmpty { object["leftovers"] = kept.map(\.copy.path) }
                    if !removed.isEmpty { object["removedLeftovers"] = removed.map(\.copy.path) }
                    let hidden = Self.hiddenRecordings(beside: url)
                    if !hidden.isEmpty { object["hiddenRecordings"] = hidden.map(\.path) }
                    console.out(ProgressRenderer.json(object))
                    continue
                }
                var how: String
                switch summary.finalisation {
                case .inPlace(let bytes): how = "finalised in place, \(bytes) bytes written"
                case .copied(let reason, let bytes): how = "copied, \(bytes) bytes written: \(reason)"
                case .notNeeded:
                    // With -o, the file named is not made (s46 #6: exit 0 and nothing there, unsaid).
                    let unwritten = output.map { "; \(Format.path(Recovery.outputLocation(recovering: url, to: $0))) was not written: use the recording where it is" }
                    console.err("reel: note: \(Format.path(url)) is complete; nothing to do" + (unwritten ?? ""))
                    // A stop killed as it finalised can leave the file complete and its copy beside it.
                    noteLeftovers(LeftoverCopies.beside(summary.url, or: url), inputs: given)
                    noteHiddenRecordings(beside: url)
                    continue
                }
                let soundOnly = Container(pathExtension: summary.url.pathExtension)?.isAudioOnly == true
                if summary.leftOutBytes > 0 {
                    if let lost = summary.leftOutFrames, lost > 0, !soundOnly {
                        how += "; the last fragment was cut short: its \(summary.keptFramesOfCutFragment) whole frames are kept, "
                            + "\(lost) frame\(lost == 1 ? "" : "s") whose end is missing left out (the last \(summary.leftOutBytes) bytes)"
                    } else if summary.leftOutFrames != nil, !soundOnly {
                        how += "; the last fragment was cut short after its \(summary.keptFramesOfCutFragment) frames: they are kept, "
                            + "the sound whose end is missing is left out (the last \(summary.leftOutBytes) bytes)"
                    } else if summary.leftOutFrames != nil {
                        how += "; the last fragment was cut short: what is whole of it is kept, the last \(summary.leftOutBytes) bytes left out"
                    } else {
                        how += "; the last \(summary.leftOutBytes) bytes, a fragment cut short before anything in it was whole, were left out"
                    }
                }
                if soundOnly {
                    console.out(String(format: "Recovered %@: %.2f s of sound (%@)", Format.path(summary.url), summary.duration.seconds, how))
                } else {
                    console.out(String(format: "Recovered %@: %.2f s, %lld frames (%@)", Format.path(summary.url), summary.duration.seconds,
                                       summary.videoFrames, how))
                }
                for marker in summary.leftOutMarkers {
                    let why = summary.keptMarkerList.map { "is not in the file, ended where it is with no room for chapters: it is kept in \(Format.path($0))" }
                        ?? (marker.start < summary.duration ? "cannot be kept: this kind of file holds no chapters"
                                                            : "was placed after what could be recovered: left out")
                    console.err("reel: note: marker '\(Format.printable(marker.title))' at \(Format.clock(seconds: marker.start.seconds)) \(why)")
                }
                noteLeftovers(LeftoverCopies.beside(summary.url, or: url), inputs: given)
                noteHiddenRecordings(beside: url)
            } catch {
                progress.finish()
                fail(Self.pointingToClips(error, given: url), of: url, json: json)
                status = 1
            }
        }
        return status
    }

    /// `error` for a clips folder that is not there (`c.flac.clips`), with a hint naming the
    /// one that is (`c.clips`: a recording's clips folder is named without its extension).
    static func pointingToClips(_ error: any Error, given url: URL) -> any Error {
        guard var error = error as? ReelError, error.errno == ENOENT, url.pathExtension == "clips" else { return error }
        let recording = url.deletingPathExtension()
        guard !["", "clips"].contains(recording.pathExtension) else { return error }
        let folder = RecordingSession.defaultFolder(for: recording)
        var isFolder: ObjCBool = false
        guard folder.standardizedFileURL != url.standardizedFileURL,
              FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder), isFolder.boolValue else { return error }
        error.hint = "the clips of \(recording.lastPathComponent) are in \(folder.lastPathComponent): reel recover \(Shell.quoted(folder.path))"
        return error
    }

    /// Says why a recording was not recovered: on standard error, and with `--json` as a
    /// `failed` event too.
    private func fail(_ error: any Error, of url: URL, json: Bool) {
        let text = CommandLineHints.rephrased(error)
        if json {
            let code = (error as? ReelError)?.code.rawValue ?? ReelError.Code.ioFailure.rawValue
            console.out(ProgressRenderer.json(["event": "failed", "file": url.path, "code": code, "message": "\(text)"]))
        }
        console.err("reel: error: \(Format.oneLine("\(text)"))")
    }

    /// `{"event": "recovered", "recording": PATH, "file": PATH, "duration": S, "frames": N,
    /// "how": "inPlace"|"copied"|"notNeeded", "bytesWritten": N, "leftOutBytes": N}`, and
    /// `"leftOutMarkers": [{"title": T, "time": S}]` for markers the file does not hold, and
    /// `"markerList": PATH` where they are kept when the file could take none.
    /// `[{"title": T, "time": S}]` for markers left out of a recovered file.
    static func json(_ markers: [Chapter]) -> [[String: Any]] {
        markers.map { ["title": $0.title, "time": ($0.start.seconds * 1000).rounded() / 1000] as [String: Any] }
    }

    static func json(_ summary: Recovery.Summary, of recording: URL) -> [String: Any] {
        var object: [String: Any] = ["event": "recovered", "recording": recording.path, "file": summary.url.path,
                                     "duration": (summary.duration.seconds * 1000).rounded() / 1000,
                                     "frames": summary.videoFrames, "leftOutBytes": summary.leftOutBytes]
        if let lost = summary.leftOutFrames { object["leftOutFrames"] = lost }
        if !summary.leftOutMarkers.isEmpty {
            object["leftOutMarkers"] = json(summary.leftOutMarkers)
        }
        if let list = summary.keptMarkerList { object["markerList"] = list.path }
        switch summary.finalisation {
        case .inPlace(let bytes): object["how"] = "inPlace"; object["bytesWritten"] = bytes
        case .copied(let reason, let bytes): object["how"] = "copied"; object["reason"] = reason; object["bytesWritten"] = bytes
        case .notNeeded: object["how"] = "notNeeded"
        }
        return object
    }

    /// The HLS playlist `url` names: an `.m3u8` file, or the playlist in a folder that is not
    /// a clips folder.
    static func playlist(toClose url: URL) -> URL? {
        var info = stat()
        // A playlist that is gone while its segments are beside it: rebuilt, as when the
        // folder is given (s43: given by its name, it said "No such file or directory").
        guard stat(url.path, &info) == 0 else {
            return url.pathExtension.lowercased() == "m3u8" && PlaylistRecovery.playlist(inFolder: url.deletingLastPathComponent()) == url ? url : nil
        }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            guard RecordingSession.recordedTarget(ofClipsIn: url) == nil else { return nil }
            // An empty index.m3u8: a stream cut off before its first segment (closing it says so).
            let index = url.appendingPathComponent("index.m3u8")
            if stat(index.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size == 0 { return index }
            return PlaylistRecovery.playlist(inFolder: url)
        }
        return url.pathExtension.lowercased() == "m3u8" ? url : nil
    }

    /// Closes the HLS playlist at `url` where it is; returns whether it worked.
    private func closePlaylist(_ url: URL, given path: String, output: URL?, json: Bool) -> Int32 {
        if output != nil {
            console.err("reel: error: \(path) is an HLS stream: its playlist is closed where it is, and -o does not apply to it "
                        + "(recover it on its own without -o)")
            return 1
        }
        do {
            let r = try PlaylistRecovery.close(url)
            // A listed segment gone: recorded time is missing from the stream.
            let status = r.isComplete ? 0 : ExitStatus.incomplete
            if json {
                console.out(ProgressRenderer.json(["event": "recovered", "recording": path, "file": url.path,
                                                   "how": r.wasClosed ? "notNeeded" : r.rebuilt ? "rebuilt" : "closed", "segments": r.segments,
                                                   "duration": (r.duration.seconds * 1000).rounded() / 1000, "added": r.added,
                                                   "leftOut": r.leftOut.map(\.name), "complete": r.isComplete]))
                return status
            }
            if r.wasClosed {
                console.err("reel: note: \(Format.path(url)) has its end already; nothing to do")
                return 0
            }
            if r.rebuilt {
                console.out(String(format: "Rebuilt %@ from %d whole segment%@, %.2f s, marked as ended (the playlist was empty or missing; the segments beside it are listed)",
                                   Format.path(url), r.segments, r.segments == 1 ? "" : "s", r.duration.seconds))
            } else {
                console.out(String(format: "Closed %@: %d segment%@, %.2f s, marked as ended (players no longer wait for more)",
                                   Format.path(url), r.segments, r.segments == 1 ? "" : "s", r.duration.seconds))
            }
            if !r.added.isEmpty && !r.rebuilt {
                console.out("  listed now (written whole, not listed yet when the stream was cut off): \(r.added.joined(separator: ", "))")
            }
            for segment in r.leftOut {
                console.out("  left out: \(segment.name) (\(segment.reason))\(segment.reason == "missing" ? "" : "; its file is left as it is")")
            }
            if !r.isComplete {
                console.out("  incomplete: a segment the playlist listed is left out; the segments after it play on, "
                            + "from a discontinuity (exit status \(ExitStatus.incomplete))")
            }
            return status
        } catch {
            fail(error, of: url, json: json)
            return 1
        }
    }

    /// Merges the clips in `folder` into `output` (default: the file they were recorded for);
    /// returns what it wrote, `nil` if it failed.
    private func recoverClips(in folder: URL, to output: URL?, overwrite: Bool, json: Bool, given: [URL]) -> RecordingSession.RecoveredRecording? {
        let progress = WorkProgressView(console: console, json: json, subject: folder.lastPathComponent)
        defer { progress.finish() }
        do {
            let r = try RecordingSession.recover(folder: folder, to: output, overwrite: overwrite, progress: progress.handler)
            progress.finish()
            if json {
                var object: [String: Any] = ["event": "recovered", "recording": folder.path, "file": r.url.path,
                                             "duration": (r.duration.seconds * 1000).rounded() / 1000, "frames": r.videoFrames,
                                             "clips": r.clipCount, "removedClips": r.removedClips, "complete": r.missingClips.isEmpty]
                if !r.missingClips.isEmpty { object["missingClips"] = r.missingClips }
                if r.finishedEarlierMerge { object["finishedEarlierMerge"] = true }
                let (removed, kept) = LeftoverCopies.tidy(LeftoverCopies.beside(r.url, purposes: ["merging"]), purposes: ["merging"], inputs: given)
                if !kept.isEmpty { object["leftovers"] = kept.map(\.copy.path) }
                if !removed.isEmpty { object["removedLeftovers"] = removed.map(\.copy.path) }
                // As the recording's `finished` says them: what the clips lost while recorded.
                object["dropped"] = r.droppedFrames
                if r.droppedFrames > 0 { object["droppedBy"] = FrameDropWords.counts(r.frameDrops) }
                if !r.packetsLeftOut.isEmpty { object["packetsLeftOut"] = MergeCommand.json(r.packetsLeftOut) }
                if !r.leftOutMarkers.isEmpty { object["leftOutMarkers"] = Self.json(r.leftOutMarkers) }
                console.out(ProgressRenderer.json(object))
                return r
            }
            var line = String(format: "Recovered %@ from %d clip%@ in %@: %.2f s", r.url.path, r.clipCount, r.clipCount == 1 ? "" : "s",
                              folder.path, r.duration.seconds)
            line += Container(pathExtension: r.url.pathExtension)?.isAudioOnly == true ? " of sound" : ", \(r.videoFrames) frames"
            if !r.finalisedClips.isEmpty { line += " (\(r.finalisedClips.count) cut off, finalised first)" }
            console.out(line)
            if r.finishedEarlierMerge {
                console.out("  \(r.url.lastPathComponent) was made of these clips by an earlier merge that was cut off before it said so: "
                            + "checked (every frame there) and kept, its tidying finished")
            }
            for drop in FrameDropWords.summaryLines(r.frameDrops) { console.out(drop) }
            console.out(r.removedClips ? "  the clips were removed" : "  the clips are kept in \(Format.path(folder))")
            let empty = r.skippedClips.filter { !r.missingClips.contains($0) }
            if !r.missingClips.isEmpty {
                console.out("  missing: \(r.missingClips.joined(separator: ", ")) (recorded, then deleted or moved out of the folder): "
                            + "the file does not hold what \(r.missingClips.count == 1 ? "it" : "they") held (exit status \(ExitStatus.incomplete))")
            }
            if !empty.isEmpty { console.out("  left out (cut off before they held anything): \(empty.joined(separator: ", "))") }
            for words in MergeCommand.words(r.packetsLeftOut) { console.out(words) }
            for marker in r.leftOutMarkers {
                console.err("reel: note: marker '\(Format.printable(marker.title))' at \(Format.clock(seconds: marker.start.seconds)) was placed after what could be recovered: left out")
            }
            // A merge killed before (by the recorder at its stop, or an earlier recover) left its
            // unfinished copy beside the file.
            noteLeftovers(LeftoverCopies.beside(r.url, purposes: ["merging"]), purposes: ["merging"], inputs: given)
            return r
        } catch {
            progress.finish()
            fail(error, of: folder, json: json)
        }
        return nil
    }

    /// The recordings cut off under a hidden name beside `url` (see
    /// ``RecordingFile/hiddenRecordings()``; s47 #1: `reel recover NAME` said "complete;
    /// nothing to do" beside 15 frames under such a name).
    static func hiddenRecordings(beside url: URL) -> [URL] {
        RecordingFile(url: url.resolvingSymlinksInPath()).hiddenRecordings()
    }

    /// Says where ``hiddenRecordings(beside:)`` are, and how to give each a name of its own.
    private func noteHiddenRecordings(beside url: URL) {
        for hidden in Self.hiddenRecordings(beside: url) {
            let named = url.deletingPathExtension().lastPathComponent + "-recovered." + url.pathExtension
            console.err("reel: note: \(hidden.path) holds a recording cut off before it could replace \(url.lastPathComponent) "
                        + "(recorded with --overwrite); recover it under a name of its own with: "
                        + "reel recover \(Shell.quoted(hidden.path)) -o \(Shell.quoted(url.deletingLastPathComponent().appendingPathComponent(named).path))")
        }
    }

    /// Removes the leftovers whose maker is gone and says so; points out the rest, which are
    /// not deleted: reel cannot know that nobody needs them (see `LeftoverCopies.tidy`).
    private func noteLeftovers(_ leftovers: [(copy: URL, of: URL)], purposes: [String] = ["finalising", "recovering", "converting"],
                               inputs: [URL]) {
        let (removed, kept) = LeftoverCopies.tidy(leftovers, purposes: purposes, inputs: inputs)
        let words = ["finalising": "finalise", "recovering": "recovery", "converting": "GIF making", "merging": "merge"]
        func what(_ leftover: (copy: URL, of: URL)) -> String {
            purposes.first { FilePlacement.maker(of: leftover.copy, beside: leftover.of, purpose: $0) != nil }.flatMap { words[$0] } ?? "command"
        }
        for leftover in removed {
            console.err("reel: note: removed \(leftover.copy.path), an unfinished copy left by an interrupted \(what(leftover)) whose process is gone; "
                        + "\(leftover.of.lastPathComponent) does not need it")
        }
        for leftover in kept {
            console.err("reel: note: \(leftover.copy.path) is an unfinished copy left by an interrupted \(what(leftover)); "
                        + "\(leftover.of.lastPathComponent) does not need it, delete it if nothing else does")
        }
    }
}
