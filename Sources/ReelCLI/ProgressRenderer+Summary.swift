import Foundation
import Reel

/// The closing summary, and the words and JSON of what it holds.
extension ProgressRenderer {
    /// An encoder speed step as a JSON event: `{"event": "encoderSpeed", "reason": "overloaded",
    /// "at": 12.5, "from": "veryfast", "to": "superfast", "waiting": 3}`, with `"refused"` (why)
    /// when the step was not taken.
    static func json(_ change: EncoderSpeedChange) -> [String: Any] {
        var object: [String: Any] = ["event": "encoderSpeed", "reason": change.reason.rawValue,
                                     "at": (change.time.seconds * 1000).rounded() / 1000,
                                     "from": change.fromPreset, "to": change.toPreset, "waiting": change.framesWaiting]
        if let refusal = change.refusal { object["refused"] = refusal }
        return object
    }

    /// A shortfall as JSON: `{"source": "app audio of 'A'", "kind": "silent", "at": 0,
    /// "message": "…"}`.
    static func json(_ shortfall: SourceShortfall) -> [String: Any] {
        ["source": shortfall.source, "kind": shortfall.kind.rawValue, "at": (shortfall.at.seconds * 1000).rounded() / 1000,
         "message": shortfall.error.description]
    }

    /// A shortfall as the summary's line: "screen: lost at 00:00:01.5: …", or for one that
    /// had nothing to record from start to end its message alone ("app audio of 'A': no
    /// application 'A' has played …").
    static func line(_ shortfall: SourceShortfall) -> String {
        let when = shortfall.at > .zero ? " at \(Format.clock(seconds: shortfall.at.seconds))" : ""
        let what = switch shortfall.kind {
        case .lost: "lost\(when): "
        case .interrupted: "interrupted\(when): "
        case .silent: ""
        case .incomplete: "incomplete\(when): "
        }
        return "\(shortfall.source): \(what)\(shortfall.error.message)"
    }

    /// What became of a file while it was recorded (someone moved or deleted it), as a line's
    /// words, or `nil` if it stayed where it was made.
    static func note(_ relocation: FileRelocation?) -> String? {
        switch relocation {
        case nil: nil
        case .moved(let from)?: "\(from.path) was renamed or moved while it was recorded: it was finalised where it went"
        case .copiedBack?: "the file was deleted while it was recorded: all of it was still held, and was copied back"
        case .savedElsewhere(let from)?:
            folderIsGone(from) ? "\(from.deletingLastPathComponent().path) was deleted while it was recorded: the recording was saved here instead"
                : "\(from.path) was deleted while it was recorded and its folder takes no new file (made read-only): the recording was saved here instead"
        }
    }

    /// Whether the folder of `file`, a recording saved elsewhere, is gone (deleted), not
    /// there and unwritable (a read-only remount); as the summary's words and keys say.
    static func folderIsGone(_ file: URL) -> Bool {
        !FileManager.default.fileExists(atPath: file.deletingLastPathComponent().path)
    }

    static func json(_ relocation: FileRelocation) -> [String: Any] {
        switch relocation {
        case .moved(let from): ["kind": "moved", "from": from.path]
        case .copiedBack(let to): ["kind": "copiedBack", "to": to.path]
        case .savedElsewhere(let from): ["kind": "savedElsewhere", "from": from.path]
        }
    }

    /// Says where the file went and what it holds.
    func printSummary(_ s: RecordingSummary) {
        // Clip mode on a disk that filled: the clips keep the recording, not merged.
        console.out(s.clipsNotMerged == nil ? "Saved \(Format.path(s.url))" : "Saved the clips in \(Format.path(s.url))")
        if let note = Self.note(s.relocation) { console.out("  note      \(note)") }
        if let notMade = s.gifNotMade { console.out("  GIF       not made: \(Format.oneLine("\(CommandLineHints.rephrased(notMade))"))") }
        if let notMerged = s.clipsNotMerged { console.out("  clips     not merged: \(Format.oneLine("\(CommandLineHints.rephrased(notMerged))"))") }
        if !s.lostClips.isEmpty {
            console.out("  lost      \(s.lostClips.count) clip\(s.lostClips.count == 1 ? "" : "s") deleted while recorded: \(s.lostClips.map(\.lastPathComponent).joined(separator: ", ")) (not in this file)")
        }
        console.out(String(format: "  duration  %.2f s, %@", s.duration.seconds, Format.bytes(s.bytes)))
        if let v = s.video, let size = s.videoSize {
            let codec = ["h264": "H.264", "hevc": "HEVC", "vp9": "VP9", "av1": "AV1"][v.codec.rawValue] ?? v.codec.rawValue
            // A GIF not made: the intermediate named is what it says.
            if s.container == .gif && s.gifNotMade == nil {
                console.out("  video     GIF \(size) at \(v.frameRate) fps, a palette of 256 colours, \(s.frames) frames, \(s.droppedFrames) dropped")
            } else {
                console.out("  video     \(codec) \(size) at \(v.frameRate) fps, \(v.rateControl), \(s.frames) frames, \(s.droppedFrames) dropped")
            }
        }
        for line in FrameDropWords.summaryLines(s.frameDrops) { console.out(line) }
        if let a = s.audio {
            let layout = a.channels == 1 ? "mono" : "stereo"
            // Lossless sound has no bit rate to choose: FLAC's follows the sound, PCM's the format.
            let rate = a.codec == .flac || a.codec == .pcm ? "lossless" : "\(a.bitRate / 1000) kb/s"
            console.out("  audio     \(a.codec.rawValue.uppercased()) \(a.sampleRate / 1000) kHz \(layout) \(rate): \(s.audioTracks.joined(separator: ", "))")
        }
        if s.clipCount > 1 {
            console.out(pauseMakesClips ? "  clips     \(s.clipCount)" : "  paused    \(s.clipCount - 1) time\(s.clipCount == 2 ? "" : "s") (the gaps are not in the file)")
        }
        for stream in s.streams { console.out("  stream    " + StreamProgress.summary(stream)) }
        // "encoder   overloaded at 00:12: preset veryfast → superfast"
        for change in s.encoderSpeedChanges { console.out("  encoder   " + String(change.description.dropFirst("encoder ".count))) }
        if s.droppedAudio > .zero {
            console.out("  warning   \(SourceEvent.lengthWords(s.droppedAudio)) of audio lost, silence in the file: not read or not written in time (the machine was busy, or reel was stopped); \(CommandLineHints.rephrased(hint: SourceEvent.missedAudioHint))")
        }
        switch s.ending {
        case .maxDuration: console.out("  stopped at the maximum duration")
        case .maxFileSize: console.out("  stopped at the maximum file size")
        case .lowDiskSpace: console.out("  stopped: the disk is full or nearly full")
        case .sourcesGone: console.out("  stopped: every source was lost or ended")
        case .requested: break
        }
        for shortfall in s.shortfalls { console.out("  missing   " + Self.line(shortfall)) }
        // Not this recording's loss (it is complete): another program's, which it caused.
        for ended in s.endedRecordings { console.out("  ended     another program's recording: " + ended) }
        if !s.isComplete {
            // The file's own shortfall (the disk filled before all recorded was written) is not a source's.
            let diskOnly = s.shortfalls.allSatisfy { $0.source == s.url.lastPathComponent && $0.error.code == .insufficientStorage }
            console.out(diskOnly ? "  incomplete: the disk filled before all that was recorded was written (exit status \(ExitStatus.incomplete))"
                        : "  incomplete: a source did not record all it was asked to (exit status \(ExitStatus.incomplete))")
        } else if s.streams.contains(where: { $0.failure != nil }) {
            console.out("  incomplete: a stream stopped early (exit status \(ExitStatus.incomplete))")
        }
    }
}
