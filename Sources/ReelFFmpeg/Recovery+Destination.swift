import Foundation
import ReelCore
import ReelSystem

/// Where a recovery writes when it is not in place.
extension Recovery {
    /// Where a recovered file goes when it is not written in place.
    struct Destination {
        var url: URL
        var container: Container
        var overwrite: Bool

        /// The recording's own place, for a recovery in place by copying.
        init(replacing recording: URL, container: Container) {
            url = recording
            self.container = container
            overwrite = true
        }

        /// Checks `output` for the recording at `recording` (a resolved path): a folder means the
        /// recording's name in it; a link is followed; it must not be the recording.
        init(output: URL, recording: URL, overwrite: Bool) throws {
            if output.hasDirectoryPath, !Recovery.isFolder(output) {
                throw ReelError(.ioFailure, "the folder \(output.path) does not exist", hint: "create it first or choose another")
            }
            let url = Self.location(output: output, recording: recording)
            guard let container = Container(pathExtension: url.pathExtension) else {
                throw ReelError(.unsupportedFormat, "unknown file type '.\(url.pathExtension)' for \(url.lastPathComponent)",
                                hint: "name the recovered file .mp4, .mov or .mkv")
            }
            var existing = stat()
            if stat(url.path, &existing) == 0 {
                if FileIdentity(recording) == FileIdentity(existing) {
                    throw ReelError(.invalidConfiguration, "the output \(url.path) is the recording \(recording.lastPathComponent) itself",
                                    hint: "to finalise the recording where it is, give no output; else give a new name")
                }
                guard (existing.st_mode & S_IFMT) == S_IFREG else {
                    throw ReelError(.invalidConfiguration, "the output \(url.path) is not a regular file", hint: "give a file or folder name")
                }
                guard overwrite else { throw Syscall.fileError(EEXIST, creating: url, action: "create") }
                try RecordingLock.checkNotBeingWritten(url)
            }
            self.url = url
            self.container = container
            self.overwrite = overwrite
        }

        /// The file that `output` means for `recording` (a resolved path): a folder means the
        /// recording's name in it, no extension the recording's; a link is followed.
        static func location(output: URL, recording: URL) -> URL {
            var url = output
            if Recovery.isFolder(url) {
                url = url.appendingPathComponent(recording.lastPathComponent)
            } else if url.pathExtension.isEmpty && !url.hasDirectoryPath {
                url = url.appendingPathExtension(recording.pathExtension)
            }
            return url.resolvingSymlinksInPath()
        }
    }

    /// The file ``recover(_:to:overwrite:progress:)`` writes when it recovers `url` to `output`: the
    /// recording's name in `output` if that is a folder, `output` with the recording's
    /// extension if it has none, else `output`; links followed. Lets a caller that recovers
    /// several recordings into one folder see that two of them would take the same name.
    public static func outputLocation(recovering url: URL, to output: URL) -> URL {
        Destination.location(output: output, recording: url.resolvingSymlinksInPath())
    }
}
