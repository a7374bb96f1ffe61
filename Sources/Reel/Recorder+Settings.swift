import Foundation
import Synchronization
import ReelFFmpeg

extension Recorder.Settings {
    /// The container of a recording into `url`: ``container``, else the one its extension
    /// names, else MP4.
    func container(for url: URL) -> Container {
        container ?? Container(pathExtension: url.pathExtension) ?? .mp4
    }

    /// Throws (`.invalidConfiguration`) unless a file of kind `container` can hold the sound of
    /// `count` audio sources as these settings record it: a WAV or FLAC file holds one audio
    /// track (``Container/maximumAudioTracks``), so two sources or more go into it only with
    /// ``mixesAudio``. (A GIF, which holds no sound, says so itself.) A recorder checks it
    /// before its file is made; an app can check it before it builds its session.
    public func checkAudioSources(_ count: Int, into container: Container) throws {
        guard let most = container.maximumAudioTracks, most > 0, count > most, !mixesAudio else { return }
        throw ReelError(.invalidConfiguration, ".\(container.fileExtension) files hold \(most == 1 ? "one audio track" : "\(most) audio tracks"), "
                        + "and there are \(count) audio sources", hint: LibraryHint.mixTheAudio)
    }
}

extension Recorder {
    /// How to record.
    public struct Settings: Sendable, Hashable {
        /// The container; `nil` takes it from the file name's extension (MP4 if none).
        public var container: Container?
        /// The video track's settings.
        public var video: VideoSettings
        /// The audio tracks' settings.
        public var audio: AudioSettings
        /// Mix every audio source into one track instead of one track each.
        public var mixesAudio: Bool
        /// Replace an existing file at the URL.
        public var overwrite: Bool
        /// How often a fragment is completed while recording (MP4/MOV: a fragment; MKV/WebM: a
        /// cluster; Ogg: a page): what a crash can lose at
        /// most, plus the frames the encoder still holds (its lookahead: about half a second
        /// with the default preset, so a kill loses about a second).
        public var fragmentInterval: MediaTime
        /// Stop once this much has been recorded (recorded time: pauses do not count). Under a
        /// real-time clock it is kept on the clock too: a source that stalls cannot hold the
        /// recording open; once this much unpaused time and two seconds more have passed, the
        /// recording ends with what came (``RecordingEnding/maxDuration``), and each source that
        /// delivered nothing for those two seconds is a shortfall (``SourceShortfall/Kind/interrupted``).
        public var maxRecordedDuration: MediaTime?
        /// The most bytes the finished file may have: the recording stops cleanly when the next
        /// frame, what the encoders still hold and the index that finalising writes would no
        /// longer fit, and packets that would take the file past it are never written. With
        /// clips, the merged file keeps the limit.
        public var maxFileSize: Int64?
        /// Stop cleanly when the disk has less free space than this (bytes), not counting the
        /// space the recording's file keeps for its own index (it is the file's already).
        public var minimumFreeSpace: Int64?
        /// The most bytes of the file that may wait to be written: the file is written by a
        /// thread of its own, so that a disk that stalls does not hold up encoding; when this
        /// many bytes wait, encoding waits (and frames are dropped and counted before it, never
        /// encoded ones). 0 writes on the encoding thread. 64 MiB by default (see
        /// ``AssetWriter/Configuration/writeBufferSize``).
        public var writeBufferSize: Int64 = 64 << 20
        /// What pausing does: end a clip (one file per clip, merged at the end) or take the
        /// paused gap out of one file's timestamps.
        public var pauseMode: PauseMode
        /// Where clip mode keeps its clips; `nil` is `NAME.clips` beside the file
        /// (``RecordingSession/defaultFolder(for:)``). The folder must not hold another
        /// recording's clips: the recorder refuses it rather than touch them.
        public var clipsFolder: URL?
        /// Whether clip mode keeps the clips' files after merging them.
        public var keepsClips: Bool
        /// Whether clip mode merges the clips into the recorder's file when it stops (else the
        /// clips stay in their folder, for ``RecordingSession/merge(to:allowsReencoding:overwrite:progress:)``).
        public var mergesClipsAtEnd: Bool
        /// Whether the recording pauses at ``maxRecordedDuration`` instead of ending there (a
        /// camera recorder's take, which an undo may reopen).
        package var pausesAtLimit = false
        /// Whether clip mode fails when the clips' disk fills (a camera recorder's take, which
        /// reports it to its delegate as a failure, as AVFoundation reports `AVErrorDiskFull`,
        /// its clips listed) instead of ending as a recording the disk stopped, its clips not
        /// merged (``RecordingSummary/clipsNotMerged``).
        package var failsWhenItsClipsDiskFills = false
        /// Whether a video encoder that falls behind steps to a faster preset (H.264 only: veryfast,
        /// superfast, ultrafast) instead of losing frames, and back when it has kept up for a
        /// while; each step is a ``RecordingEvent/encoderSpeedChanged(_:)``. Off, the preset is
        /// kept and a recorder that falls behind drops frames (counted). Applies under a
        /// real-time clock only (otherwise nothing is dropped anyway).
        public var adaptsEncoderSpeed: Bool = true

        /// Recording settings; each argument is the property of the same name. The defaults make
        /// one H.264/AAC MP4 with half-second fragments and no length or size limit, stopping
        /// cleanly when less than 100 MB of disk is free.
        public init(container: Container? = nil, video: VideoSettings = VideoSettings(), audio: AudioSettings = AudioSettings(),
                    mixesAudio: Bool = false, overwrite: Bool = false,
                    fragmentInterval: MediaTime = MediaTime(value: 1, timescale: 2), maxRecordedDuration: MediaTime? = nil,
                    maxFileSize: Int64? = nil, minimumFreeSpace: Int64? = 100_000_000, pauseMode: PauseMode = .singleFile,
                    clipsFolder: URL? = nil, keepsClips: Bool = false, mergesClipsAtEnd: Bool = true) {
            self.container = container
            self.video = video
            self.audio = audio
            self.mixesAudio = mixesAudio
            self.overwrite = overwrite
            self.fragmentInterval = fragmentInterval
            self.maxRecordedDuration = maxRecordedDuration
            self.maxFileSize = maxFileSize
            self.minimumFreeSpace = minimumFreeSpace
            self.pauseMode = pauseMode
            self.clipsFolder = clipsFolder
            self.keepsClips = keepsClips
            self.mergesClipsAtEnd = mergesClipsAtEnd
        }
    }

    /// What pausing does.
    public enum PauseMode: String, Sendable, Hashable {
        /// Each pause ends a clip in its own file; the clips merge into one file at the end.
        case clips
        /// One file; the paused gaps are taken out of its timestamps.
        case singleFile = "single-file"
    }
}
