/// The hints of library errors that a command line says in its own words: a library user sets
/// a property where a command-line user passes a flag. Each is one constant, so that the CLI
/// can recognise it exactly and name its flag instead (see `CommandLineHints` in ReelCLI).
package enum LibraryHint {
    /// A file exists where a recording or a merge was to go.
    package static let allowOverwriting = "choose another name, or allow overwriting (the overwrite setting)"
    /// The folder a recording is to go in does not exist.
    package static let createFolderOrChooseAnother = "create it, or give the recording a place in a folder that exists"
    /// The folder a recording is to go in cannot be written.
    package static let chooseAnotherFolder = "give the recording a place in a folder that can be written"
    /// Less than the minimum of free space is left where a recording is to go.
    package static let freeSpaceOrLowerMinimum = "free some space, record elsewhere, or lower the minimum of free space (the minimumFreeSpace setting; nil turns the check off)"
    /// A file at a recording's name holds a recording a crash cut off.
    package static let overwritingDiscardsIt = "overwriting (the overwrite setting) would discard it"
    /// A folder is at a recording's name.
    package static let giveAFileName = "give the recording the name of a file, not of a folder"
    /// A folder is at a merge's output.
    package static let giveTheMergeAFileName = "give the merged file the name of a file, not of a folder"
    /// Clips differ, or a muted clip's audio cannot take silence, without re-encoding.
    package static let allowReencoding = "allow re-encoding (allowsReencoding)"
    /// The container cannot hold the video codec.
    package static let useMKVOrH264 = "record into MKV, or use the H.264 video codec"
    /// This FFmpeg lacks the video encoder asked for.
    package static let useH264 = "use the H.264 video codec"
    /// This FFmpeg lacks the video encoder asked for, which another libavcodec may have.
    package static let installEncoderOrUseH264 = "install a libavcodec with it, or use the H.264 video codec"
    /// The file holds one audio track, and there are several audio sources.
    package static let mixTheAudio = "mix the audio sources into one track (the mixesAudio setting), or record into an M4A or Ogg file, which holds a track for each"
    /// The container cannot hold the audio codec, or this FFmpeg lacks its encoder.
    package static let useAAC = "use the AAC audio codec"
    /// A filter changes the frame rate or holds pictures back: the recording's frame rate says
    /// how many pictures there are.
    package static let frameRateSetsPictures = "the recording's frame rate sets how many pictures there are (the video settings' frame rate); a filter here changes each picture in its turn"
    /// A GIF cannot be made from its recording where a file has taken its name.
    package static let nameTheGIF = "make the GIF under another name, or allow replacing the file (overwrite)"
    /// An X11 window to record can be named instead of clicked or focused.
    package static let nameTheWindow = "name the window by its id or title (X11WindowSelector)"
    /// No camera at the path asked for.
    package static let listCameras = "check the path; CaptureDevice.devices(for: .video) lists the cameras"
    /// A device node that is not a camera's capture node.
    package static let chooseCameraNode = "choose a camera node; CaptureDevice.devices(for: .video) lists them"
    /// A camera refused the format chosen from those it listed.
    package static let checkCameraFormats = "check what the camera offers (CaptureDevice.formats)"
    /// No audio device of the name asked for, or it went away.
    package static let listAudioDevices = "CaptureDevice.devices(for: .audio) lists the audio devices"
    /// A window asked for is not there: the display's windows follow.
    package static let windowsFollow = "choose a window by its id or title (X11WindowSelector)"
    /// Several windows match a name: one is named by its id, which follows.
    package static let nameOneByItsID = "name one by its id (X11WindowSelector.id), e.g. "
    /// A replay buffer kept on disk found the disk full.
    package static let replaySpillFull = "free space there, keep the buffer in memory, or give it fewer bytes (maxBytes)"
    /// A replay save's folder is a file, or cannot be made.
    package static let chooseReplayFolder = "choose another folder for the replays"
    /// A replay save's folder cannot be written.
    package static let chooseWritableReplayFolder = "choose a folder for the replays that can be written"
    /// Every numbered dated name of the moment is taken in a folder.
    package static let nameTheRecording = "give the recording a name of your own"
    /// Recovering a file where it is cannot write there.
    package static let recoverIntoWritableFolder = "recover it into a folder you can write to (Recovery.recover(_:to:))"
    /// A GIF there is no room for can be made on another disk.
    package static let makeTheGIFOnAnotherDisk = "or make it on another disk (Recovery.recover(_:to:), to a .gif there)"
    /// Recovering a file needs about as much free space as the recording takes.
    package static let recoverToAnotherDisk = "free as much space as the recording takes, or recover it to another disk (Recovery.recover(_:to:))"
    /// A clips folder's manifest is damaged: the clip files themselves can still be merged.
    package static let mergeTheClipFiles = "merge the clip files with Merger.merge(_:to:)"
    /// A filter of sound was given where pictures are filtered.
    package static let videoFiltersOnly = "a VideoFilter changes the picture; `ffmpeg -filters` marks video filters V->V"
    /// Frames were lost because the encoder could not keep up.
    package static let encodeFaster = "give the encoder less to do: a faster preset (the video settings' preset), a smaller size or fewer frames a second"
    /// Frames were lost because the capture missed their time on a busy machine.
    package static let captureLess = "capture less (fewer frames a second, a smaller size), or leave the machine less busy"
    /// An X server without Composite cannot redirect a window: the screen can still be recorded.
    package static let recordTheScreenInstead = "record the screen or a region of it instead (the screen source's region), or start the server with Composite"

    /// A recording a crash, a full disk or a failed finish cut off, which ``Recovery`` finalises.
    package static let finalise = PathHint(before: "finalise ", after: " with Recovery.recover(_:)")
    /// A GIF recording's intermediate, which ``Recovery`` makes into the GIF.
    package static let makeTheGIF = PathHint(before: "make ", after: " into the GIF with Recovery.recover(_:)")
    /// A folder of clips, which `RecordingSession.recover(folder:to:overwrite:progress:)` merges into the file they were recorded for.
    package static let mergeTheClips = PathHint(before: "merge the clips in ", after: " with RecordingSession.recover(folder:)")
    /// A folder of clips whose file cannot be made where it was meant to go.
    package static let mergeTheClipsElsewhere = PathHint(before: "merge the clips in ", after: " into another file with RecordingSession.recover(folder:to:)")
    /// An HLS playlist without its end, which `PlaylistRecovery.close(_:)` ends.
    package static let closeThePlaylist = PathHint(before: "end the playlist ", after: " with PlaylistRecovery.close(_:)")
    /// A look given inside a filter graph, where it cannot stand.
    package static let giveTheLookAlone = PathHint(before: "give the look alone (VideoFilter.look(.", after: ")), or its graph")

    /// Every hint that names a path (or a value) in its words.
    package static let withPaths = [finalise, makeTheGIF, mergeTheClips, mergeTheClipsElsewhere, closeThePlaylist, giveTheLookAlone]
}

/// A library hint that names a file, a folder (or a value) between its words:
/// `LibraryHint.finalise(url.path)`. The words around it are fixed, so that a command line can
/// find the hint in an error's text, take the path out and say its own command instead.
package struct PathHint: Sendable, Hashable {
    /// The words before the path.
    package let before: String
    /// The words after the path: they name the library call that does it. (A command line
    /// replaces a hint whose words end another's first.)
    package let after: String

    /// The hint naming `path`.
    package func callAsFunction(_ path: String) -> String { before + path + after }

    /// `text` with each place this hint is said in it replaced by `replacement(path)`. The path
    /// runs from the first `before` followed by an absolute path (a library hint's paths are)
    /// to the next `after`; without one, from the `before` nearest `after`.
    package func replacing(in text: String, with replacement: (String) -> String) -> String {
        var result = ""
        var rest = text[...]
        while let end = rest.range(of: after) {
            let head = rest[..<end.lowerBound]
            var start: Range<Substring.Index>?
            var from = head.startIndex
            while let found = head.range(of: before, range: from..<head.endIndex) {
                if head[found.upperBound...].hasPrefix("/") { start = found; break }
                from = found.upperBound
            }
            if start == nil { start = head.range(of: before, options: .backwards) }
            if let start {
                result += rest[..<start.lowerBound] + replacement(String(head[start.upperBound...]))
            } else {
                result += rest[..<end.upperBound]
            }
            rest = rest[end.upperBound...]
        }
        return result + rest
    }
}
