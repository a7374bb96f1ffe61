import Foundation
import Synchronization
import ReelFFmpeg

/// One clip of a recording session: what was recorded between a start (or resume) and a pause
/// (or stop), in its own file.
public struct Clip: Sendable, Hashable {
    /// The clip's file.
    public var url: URL
    /// The clip's duration.
    public var duration: MediaTime
    /// Video frames in the clip.
    public var frameCount: Int64
    /// Whether the clip has audio.
    public var hasAudio: Bool
    /// Whether the clip's audio is replaced by silence when the session is merged.
    public var isMutedOnMerge: Bool

    public init(url: URL, duration: MediaTime, frameCount: Int64, hasAudio: Bool, isMutedOnMerge: Bool = false) {
        self.url = url
        self.duration = duration
        self.frameCount = frameCount
        self.hasAudio = hasAudio
        self.isMutedOnMerge = isMutedOnMerge
    }
}

/// A recording as a session of clips, in the NextLevel tradition: pausing ends a clip,
/// resuming starts the next, and at the end the clips merge into one file without re-encoding.
///
/// A recorder in ``Recorder/PauseMode/clips`` mode keeps its clips here; its ``folder`` holds
/// their files. Clips can be removed (the last take redone) while the recorder is paused or
/// after it stopped, muted for the merge, and merged again into any file.
public final class RecordingSession: Sendable {
    /// The folder that holds the clips' files.
    public let folder: URL
    private struct State {
        var clips: [Clip] = []
        var current: MediaTime = .zero
    }
    private let state = Mutex(State())

    /// Creates a session whose clips live in `folder`.
    public init(folder: URL) {
        self.folder = folder
    }

    /// The finished clips, in order.
    public var clips: [Clip] { state.withLock { $0.clips } }

    /// The finished clips' durations added up, plus the clip being recorded.
    public var totalDuration: MediaTime {
        state.withLock { s in s.clips.reduce(s.current) { $0 + $1.duration } }
    }

    /// How long the clip being recorded is so far (zero while paused).
    public var currentClipDuration: MediaTime { state.withLock { $0.current } }

    /// Removes the clip at `index` from the session and, if asked, its file.
    public func removeClip(at index: Int, removeFile: Bool = true) throws {
        let clip = try state.withLock { s -> Clip in
            guard s.clips.indices.contains(index) else {
                throw ReelError(.invalidConfiguration, "there is no clip \(index + 1) (the session has \(s.clips.count))")
            }
            return s.clips.remove(at: index)
        }
        if removeFile { try? FileManager.default.removeItem(at: clip.url) }
    }

    /// Removes the last clip (the last take) and its file.
    public func removeLastClip() throws {
        let count = clips.count
        guard count > 0 else { throw ReelError(.invalidConfiguration, "the session has no clips to remove") }
        try removeClip(at: count - 1)
    }

    /// Removes every clip from the session, and their files if `removeFiles`.
    public func removeAllClips(removeFiles: Bool = true) {
        let removed = state.withLock { s -> [Clip] in
            let all = s.clips
            s.clips = []
            return all
        }
        if removeFiles { for clip in removed { try? FileManager.default.removeItem(at: clip.url) } }
    }

    /// Marks the clip at `index` to be silent in a merge (it keeps its place on the timeline).
    public func setMutedOnMerge(_ muted: Bool, at index: Int) throws {
        try state.withLock { s in
            guard s.clips.indices.contains(index) else { throw ReelError(.invalidConfiguration, "there is no clip \(index + 1)") }
            s.clips[index].isMutedOnMerge = muted
        }
    }

    /// Joins the clips into `url`: by copying packets when their streams match, by
    /// re-encoding the mismatching ones if `allowsReencoding`, else refusing with
    /// `.incompatibleClips`. The clips stay on disk.
    @discardableResult
    public func merge(to url: URL, allowsReencoding: Bool = false, overwrite: Bool = false) throws -> MergeSummary {
        let clips = self.clips
        guard !clips.isEmpty else { throw ReelError(.nothingRecorded, "the session has no clips to merge") }
        return try Merger.merge(clips.map { MergeInput(url: $0.url, isMuted: $0.isMutedOnMerge) }, to: url,
                                options: MergeOptions(allowsReencoding: allowsReencoding, overwrite: overwrite))
    }

    // Updated by the recorder.
    func append(_ clip: Clip) { state.withLock { $0.clips.append(clip); $0.current = .zero } }
    func setCurrentDuration(_ duration: MediaTime) { state.withLock { $0.current = duration } }
}
