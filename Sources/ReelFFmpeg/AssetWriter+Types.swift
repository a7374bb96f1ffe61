import Foundation
import ReelCore

extension AssetWriter {
    /// Where a writer is in its life, as `AVAssetWriter.Status`.
    public enum Status: Sendable, Hashable {
        /// Made, not writing yet: inputs can be added (``AssetWriter/add(_:)``) until
        /// ``AssetWriter/startWriting()``.
        case unknown
        /// The file is open and takes media.
        case writing
        /// Finished: the file is complete (``AssetWriter/finishWriting()``).
        case completed
        /// Stopped by an error or a misuse, which ``AssetWriter/error`` holds. The file keeps
        /// what was written (finished where it could be: see ``AssetWriter/error``).
        case failed
        /// Stopped by ``AssetWriter/cancelWriting()``: the file keeps what reached the disk.
        case cancelled
    }

    /// The description of a video track.
    public struct VideoTrack: Sendable, Hashable {
        /// How the track is encoded.
        public var settings: VideoSettings
        /// The pixel format of the frames that will be appended.
        public var inputFormat: PixelFormat
        /// The size of the frames that will be appended.
        public var inputSize: PixelSize
        /// Whether frames of another shape than ``VideoSettings/size`` are fitted into it with
        /// their aspect kept, black bars around them, rather than stretched to it: pictures a
        /// filter shaped (see `SourceDescriptor.sizeMadeByFilter`).
        package var keepsAspect = false

        /// Describes a video track; each argument is the property of the same name.
        public init(settings: VideoSettings, inputFormat: PixelFormat, inputSize: PixelSize) {
            self.settings = settings
            self.inputFormat = inputFormat
            self.inputSize = inputSize
        }

        /// Where pictures of `picture` size go in a track of `size` when their aspect is kept:
        /// centred, as large as fits, at even places; `nil` when they fill it (the shapes are
        /// the same, or the bars would be thinner than 1% of the side: a stretch that small
        /// is not seen, a black line at the edge is).
        package static func placement(of picture: PixelSize, in size: PixelSize) -> PixelRect? {
            let area = CompositionLayout.fit(picture, in: PixelRect(x: 0, y: 0, width: size.width, height: size.height))
            let thin = (width: max(2, size.width / 100), height: max(2, size.height / 100))
            return size.width - area.width <= thin.width && size.height - area.height <= thin.height ? nil : area
        }
    }

    /// The description of an audio track.
    public struct AudioTrack: Sendable, Hashable {
        /// How the track is encoded.
        public var settings: AudioSettings
        /// The format of the audio that will be appended.
        public var inputFormat: AudioFormat
        /// A title stored in the file ("Microphone", "App audio").
        public var title: String?

        /// Describes an audio track; each argument is the property of the same name.
        public init(settings: AudioSettings, inputFormat: AudioFormat, title: String? = nil) {
            self.settings = settings
            self.inputFormat = inputFormat
            self.title = title
        }
    }

    /// What to write and where.
    public struct Configuration: Sendable {
        /// The file to write.
        public var url: URL
        /// The container (MP4, MOV or MKV).
        public var container: Container
        /// The video track, if any.
        public var video: VideoTrack?
        /// The audio tracks, in the order `appendAudio(_:track:)` numbers them.
        public var audio: [AudioTrack]
        /// How often a fragment is completed while recording (MP4/MOV: a fragment; MKV/WebM: a
        /// cluster; Ogg: a page) — what a kill can lose; `nil` writes a plain file.
        public var fragmentInterval: MediaTime?
        /// Whether an existing file may be replaced.
        public var overwrite: Bool
        /// How long the recording will last at most, if known (a recorder's maximum duration).
        /// A fragmented MP4/MOV keeps space at its front for the index of a recording that long
        /// (an hour if `nil`), so that ``finish()`` can finalise it in place; a longer one is
        /// finalised by copying.
        public var expectedDuration: MediaTime?
        /// The bytes kept at the front of a fragmented MP4/MOV for its final index, instead of
        /// the estimate from `expectedDuration`; 0 keeps none (``finish()`` then copies). Given
        /// explicitly, the space is used whatever the size of the recording; estimated, a
        /// recording smaller than the unused space is copied instead (cheap, and smaller: a
        /// few seconds' file is about the size of its media), unless
        /// ``AssetWriter/endSession(atSourceTime:)`` cut media appended past the end off, which
        /// only the index written in place can hide.
        public var indexReservation: Int?
        /// The most bytes the finished file may have. Packets that would take it past this are
        /// not written (video in whole groups, so that the file never misses a frame before
        /// its last): ``isFull`` then turns true. The space kept for the index is capped so that
        /// it does not eat the room, and a file that would be over the limit finalised in
        /// place is finalised by copying, which leaves no unused space.
        public var maximumFileSize: Int64?
        /// The most bytes of the file that may wait to be written. The file is written by a
        /// thread of the writer's own, so that a slow write (a busy or slow disk) does not hold
        /// up encoding; when this many bytes wait, appending waits for the disk (nothing is
        /// dropped). 0 writes on the appending thread instead. 64 MiB by default.
        public var writeBufferSize: Int64 = 64 << 20

        /// Describes a file to write; each argument is the property of the same name, and a `nil`
        /// container is taken from the file name's extension.
        public init(url: URL, container: Container? = nil, video: VideoTrack?, audio: [AudioTrack] = [],
                    fragmentInterval: MediaTime? = MediaTime(value: 1, timescale: 2), overwrite: Bool = false,
                    expectedDuration: MediaTime? = nil, indexReservation: Int? = nil, maximumFileSize: Int64? = nil) {
            self.url = url
            self.container = container ?? Container(pathExtension: url.pathExtension) ?? .mp4
            self.video = video
            self.audio = audio
            self.fragmentInterval = fragmentInterval
            self.overwrite = overwrite
            self.expectedDuration = expectedDuration
            self.indexReservation = indexReservation
            self.maximumFileSize = maximumFileSize
        }
    }

    /// What was written, known after ``finish()``.
    public struct Summary: Sendable, Hashable {
        /// The file written.
        public var url: URL
        /// The duration of the longest track.
        public var duration: MediaTime
        /// The video frames the file holds.
        public var videoFrames: Int64
        /// The audio frames (samples per channel) each audio track holds.
        public var audioSamples: [Int64]
        /// The finished file's size in bytes.
        public var bytes: Int64
        /// How the file was finalised.
        public var finalisation: Finalisation
    }

    /// How a fragmented MP4/MOV became a regular file.
    public enum Finalisation: Sendable, Hashable {
        /// Nothing needed finalising (MKV, or a file written without fragments).
        case notNeeded
        /// The index was written into the space reserved at the front of the file and the
        /// fragment headers were turned into `free` boxes: `bytesWritten` bytes, no media data.
        case inPlace(bytesWritten: Int64)
        /// The file was copied into a new regular one of `bytesWritten` bytes; `reason` says
        /// why it was not finalised in place.
        case copied(reason: String, bytesWritten: Int64)

        /// The bytes written to finalise the file.
        public var bytesWritten: Int64 {
            switch self {
            case .notNeeded: return 0
            case .inPlace(let bytes), .copied(_, let bytes): return bytes
            }
        }

        /// Whether the file was finalised in place.
        public var isInPlace: Bool {
            if case .inPlace = self { return true }
            return false
        }
    }
}
