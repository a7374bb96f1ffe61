import Foundation
import ReelFFmpeg
import ReelSystem

/// What a clips folder's manifest says: the file the clips are for and the clips in order.
struct ClipsManifest: Codable, Sendable, Hashable {
    enum Phase: String, Codable, Sendable {
        /// A recorder is writing the clips, or was until it was cut off.
        case recording
        /// The clips are complete but were not merged.
        case stopped
        /// The recorder is merging the complete clips into the target (a file there written
        /// after the manifest, holding every frame of the clips, is their merge).
        case merging
        /// The clips were merged into the target.
        case merged
    }

    struct Entry: Codable, Sendable, Hashable {
        /// The clip's file name inside the folder.
        var file: String
        var muted: Bool
        /// Whether the recorder finished the clip (else it may be cut off, or empty).
        var finished: Bool
        var frames: Int64?
        var duration: Double?
        /// The chapter markers in the clip: microseconds from its start, and titles (absent in
        /// manifests of recorders before markers, and in clips without any).
        var chapters: [ChapterEntry]?
        /// The video frames lost while the clip was recorded, by why (``FrameDropReason`` raw
        /// values): absent in manifests of recorders before drops were kept, in clips that lost
        /// none, and in clips not finished.
        var drops: [String: Int64]?

        /// The frames the clip lost, by why (none when the manifest does not say; a reason this
        /// recorder does not know is left out).
        var frameDrops: FrameDrops {
            var all = FrameDrops()
            for (name, count) in drops ?? [:] {
                if let reason = FrameDropReason(rawValue: name), count > 0 { all.add(count, reason) }
            }
            return all
        }

        /// What the manifest keeps of `drops` (nothing when none was lost).
        static func kept(_ drops: FrameDrops) -> [String: Int64]? {
            drops.total > 0 ? Dictionary(uniqueKeysWithValues: drops.counts.map { ($0.key.rawValue, $0.value) }) : nil
        }
    }

    /// A chapter marker of a clip, as the manifest keeps it.
    struct ChapterEntry: Codable, Sendable, Hashable {
        var microseconds: Int64
        var title: String

        init(_ chapter: Chapter) {
            microseconds = chapter.start.convertedValue(to: 1_000_000)
            title = chapter.title
        }

        var chapter: Chapter { Chapter(start: MediaTime(value: microseconds, timescale: 1_000_000), title: title) }
    }

    var format = "reel-clips"
    var version = 1
    /// The file the clips merge into (a path).
    var target: String
    var state: Phase
    /// Whether the recording asked to keep the clips after merging them.
    var keepsClips: Bool
    var clips: [Entry]
    /// The folder the manifest was last written into (a path; absent in manifests of older
    /// versions): a folder found elsewhere was copied, moved or renamed since.
    var folder: String?
    /// The merged file a recovery made of the clips, noted (on the disk) before the file took
    /// its name (absent until then, and in manifests of older versions): a recovery cut off
    /// after the file took its name and before the manifest said merged left that file there,
    /// and the next one knows it for the merge and finishes the tidy (it refused the name as
    /// taken, and the folder stayed for ever).
    var merge: MergedFile?

    /// A merged file, as ``merge`` keeps it.
    struct MergedFile: Codable, Sendable, Hashable {
        var device: UInt64
        var inode: UInt64
        var bytes: Int64
        /// The clips merged into it, in order (a folder kept for a missing clip is merged
        /// again, that clip put back: the earlier file is then not this merge).
        var clips: [String]
        /// Whether the merge left out packets the clips list and do not play (the clips are
        /// kept then, as ``MergeSummary/packetsLeftOut`` keeps them).
        var leftPacketsOut: Bool

        /// Whether `url` leads to this file (the same file, of the same size).
        func isFile(at url: URL) -> Bool {
            FileIdentity(url) == FileIdentity(device: device, inode: inode) && FileIdentity.size(of: url) == bytes
        }
    }

    init(target: String, state: Phase, keepsClips: Bool, clips: [Entry]) {
        self.target = target
        self.state = state
        self.keepsClips = keepsClips
        self.clips = clips
    }

    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do { return try encoder.encode(self) + Data("\n".utf8) } catch {
            throw ReelError(.ioFailure, "cannot write the clips manifest: \(error)")
        }
    }

    /// Reads the manifest in `folder`, or `nil` if there is none.
    static func read(in folder: URL) throws -> ClipsManifest? {
        let url = folder.appendingPathComponent(RecordingSession.manifestName)
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        do {
            let manifest = try JSONDecoder().decode(ClipsManifest.self, from: data)
            // Only clip files of this folder: a manifest never leads outside it.
            guard manifest.format == "reel-clips", manifest.clips.allSatisfy({ RecordingSession.isClipName($0.file) }) else {
                throw ReelError(.invalidMedia, "not a clips manifest")
            }
            return manifest
        } catch {
            throw ReelError(.invalidMedia, "\(url.path) is damaged", hint: LibraryHint.mergeTheClipFiles)
        }
    }

    /// Writes the manifest into `folder` under a new name, then renames it over the old one
    /// (`FilePlacement.replaceDurably`).
    /// With `stamping`, ``folder`` becomes `folder` (the recorder's writes, which follow a
    /// folder moved while recorded); a recovery's writes keep it as the recorder left it, so
    /// that a copy stays a copy to the next recovery (else its merge went to the original's
    /// place, and with `--overwrite` over it).
    func write(into folder: URL, stamping: Bool = true) throws {
        let url = folder.appendingPathComponent(RecordingSession.manifestName)
        let temporary = folder.appendingPathComponent(".\(RecordingSession.manifestName).\(getpid()).new")
        var stamped = self
        if stamping { stamped.folder = folder.standardizedFileURL.path }
        let data = try stamped.encoded()
        // Written straight to its temporary name (FileManager.createFile writes through a
        // `.dat.nosync…` file of its own, which a kill left in the folder) and on the disk
        // before it takes the manifest's name.
        try FilePlacement.replaceDurably(url, with: data, through: temporary) { RecordingSession.folderError($0, folder) }
    }
}
