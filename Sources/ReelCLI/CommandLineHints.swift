import Reel

/// The library's hints said the command line's way: where a library user is told to set a
/// property (``LibraryHint``), a `reel` user is told which flag to pass.
enum CommandLineHints {
    /// Each library hint and what the command line says instead.
    static let flags: [(library: String, commandLine: String)] = [
        (LibraryHint.allowOverwriting, "choose another name, or pass --overwrite"),
        (LibraryHint.createFolderOrChooseAnother, "create it or choose another with -o"),
        (LibraryHint.chooseAnotherFolder, "choose another with -o"),
        (LibraryHint.freeSpaceOrLowerMinimum, "free some space, record elsewhere with -o, or lower --min-free (such as --min-free 10M; 0 turns the check off)"),
        (LibraryHint.overwritingDiscardsIt, "--overwrite would discard it"),
        (LibraryHint.giveAFileName, "give a file name with -o"),
        (LibraryHint.giveTheMergeAFileName, "give a file name with -o"),
        (LibraryHint.nameTheGIF, "add -o OTHER.gif to make it under another name, or --overwrite to replace the file"),
        (LibraryHint.allowReencoding, "pass --reencode"),
        (LibraryHint.useMKVOrH264, "use --format mkv or --codec h264"),
        (LibraryHint.installEncoderOrUseH264, "install a libavcodec with it, or use --codec h264"),
        (LibraryHint.useH264, "use --codec h264"),
        (LibraryHint.useAAC, "use --audio-codec aac"),
        (LibraryHint.mixTheAudio, "add --mix-audio to mix them into one track, or record into an .m4a or .opus file, which holds a track for each"),
        (LibraryHint.frameRateSetsPictures, "--fps sets how many pictures a second there are; --frame-mode content records a picture only when it changes"),
        (LibraryHint.nameTheWindow, "name the window with --window=ID|NAME"),
        (LibraryHint.listCameras, "check the path; reel devices lists the cameras"),
        (LibraryHint.chooseCameraNode, "choose a camera node; reel devices lists them"),
        (LibraryHint.checkCameraFormats, "check what the camera offers with reel devices"),
        (LibraryHint.listAudioDevices, "reel devices lists the audio devices"),
        (LibraryHint.windowsFollow, "name one with --window=ID|NAME (reel devices lists the windows)"),
        (LibraryHint.nameOneByItsID, "name one by its id, e.g. --window="),
        (LibraryHint.chooseReplayFolder, "choose a folder with --replay-dir"),
        (LibraryHint.chooseWritableReplayFolder, "choose a folder you can write to with --replay-dir"),
        (LibraryHint.nameTheRecording, "choose a name with -o"),
        (LibraryHint.replaySpillFull, "free space there, record without --replay-spill, or lower --replay-max-size"),
        (LibraryHint.recoverIntoWritableFolder, "recover it into a folder you can write to (reel recover FILE -o FOLDER)"),
        (LibraryHint.recoverToAnotherDisk, "free as much space as the recording takes, or recover it to another disk (reel recover FILE -o FOLDER)"),
        (LibraryHint.makeTheGIFOnAnotherDisk, "or make it on another disk (reel recover NAME.gif -o FOLDER)"),
        (LibraryHint.mergeTheClipFiles, "merge the clip files with reel merge"),
        (LibraryHint.videoFiltersOnly, "--filter changes the picture; `ffmpeg -filters` marks video filters V->V"),
        (LibraryHint.encodeFaster, "try a faster --preset (such as veryfast or ultrafast), a smaller --size or a lower --fps"),
        (LibraryHint.captureLess, "try a lower --fps or a smaller --size, or leave the machine less busy"),
        (LibraryHint.recordTheScreenInstead, "record the screen or a region of it instead (--region), or start the server with Composite"),
    ]

    /// Each library hint that names a path (or a value), and what the command line says
    /// instead. A hint whose words end another's comes first (the GIF's before the finalising).
    static let commands: [(library: PathHint, commandLine: @Sendable (String) -> String)] = [
        (LibraryHint.makeTheGIF, { "make it into the GIF with: reel recover \(Shell.quoted($0))" }),
        (LibraryHint.finalise, { "finalise it with: reel recover \(Shell.quoted($0))" }),
        (LibraryHint.mergeTheClips, { "merge them with: reel recover \(Shell.quoted($0))" }),
        (LibraryHint.mergeTheClipsElsewhere, { "merge them elsewhere with: reel recover \(Shell.quoted($0)) -o FILE|FOLDER" }),
        (LibraryHint.closeThePlaylist, { "end it with: reel recover \(Shell.quoted($0))" }),
        (LibraryHint.giveTheLookAlone, { "give the look alone (--filter \($0)), or its graph" }),
    ]

    /// `error` with its hint in the command line's words.
    static func rephrased(_ error: ReelError) -> ReelError {
        guard let hint = error.hint else { return error }
        var rephrased = error
        rephrased.hint = Self.rephrased(hint: hint)
        return rephrased
    }

    /// A library hint in the command line's words.
    static func rephrased(hint: String) -> String {
        var hint = hint
        for (library, commandLine) in flags { hint = hint.replacingOccurrences(of: library, with: commandLine) }
        for (library, commandLine) in commands { hint = library.replacing(in: hint, with: commandLine) }
        return hint
    }

    /// Any error, a ``ReelError``'s hint in the command line's words.
    static func rephrased(_ error: any Error) -> any Error {
        (error as? ReelError).map { rephrased($0) } ?? error
    }
}
