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
    /// A file at a recording's name holds a recording a crash cut off.
    package static let overwritingDiscardsIt = "overwriting (the overwrite setting) would discard it"
    /// A folder is at a recording's name.
    package static let giveAFileName = "give the recording the name of a file, not of a folder"
    /// Clips differ, or a muted clip's audio cannot take silence, without re-encoding.
    package static let allowReencoding = "allow re-encoding (allowsReencoding)"
    /// The container cannot hold the video codec.
    package static let useMKVOrH264 = "record into MKV, or use the H.264 video codec"
    /// This FFmpeg lacks the video encoder asked for.
    package static let useH264 = "use the H.264 video codec"
    /// This FFmpeg lacks the video encoder asked for, which another libavcodec may have.
    package static let installEncoderOrUseH264 = "install a libavcodec with it, or use the H.264 video codec"
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
}
