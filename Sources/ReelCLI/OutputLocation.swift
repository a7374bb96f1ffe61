import Foundation
import ReelSystem
import Reel

/// Where a recording goes when no `-o` is given: the user's videos folder (XDG `VIDEOS`
/// directory, else `~/Videos`) with a dated name.
public enum OutputLocation {
    /// What a path given with `-o` names.
    public enum Kind: Equatable {
        /// A file to write (it may exist: then `--overwrite` decides).
        case file
        /// An existing folder: a dated file goes in it.
        case folder
        /// A path ending in `/` whose folder does not exist.
        case missingFolder
        /// An existing device, pipe or socket (`/dev/stdout`, a FIFO): not a file reel writes.
        case special(String)

        /// What `path` names, following symbolic links.
        public init(path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else {
                self = path.hasSuffix("/") ? .missingFolder : .file
                return
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR: self = .folder
            case S_IFREG: self = .file
            case S_IFCHR, S_IFBLK: self = .special("a device")
            case S_IFIFO: self = .special("a pipe")
            case S_IFSOCK: self = .special("a socket")
            default: self = .special("not a regular file")
            }
        }
    }

    /// Checks a path given to `option` (`-o`, `--frame-log`) for a file reel is to write: it
    /// refuses standard output (`-`), devices, pipes and sockets, and a folder unless
    /// `allowsFolder`, with a usage error that ends by asking for `wanted` ("a file name").
    /// Returns what the path names.
    @discardableResult
    static func checkOutputPath(_ path: String, option: String, wanted: String, allowsFolder: Bool) throws -> Kind {
        guard path != "-" else {
            throw UsageError("\(option) -: reel does not write to standard output, which is not a file; give \(wanted)")
        }
        let kind = Kind(path: path)
        switch kind {
        case .special(let what):
            throw UsageError("\(option) \(path) is \(what), not a file: reel writes regular files (give \(wanted))")
        case .folder where !allowsFolder, .missingFolder where !allowsFolder:
            throw UsageError("\(option) \(path) is a folder: give \(wanted)")
        default:
            return kind
        }
    }

    /// Refuses `-o NAME` without an ending when a file `NAME` exists (a user's file, or
    /// /dev/stdout redirected to one): reel would write a sibling `NAME.mp4` beside it.
    static func checkNoFileWithoutEnding(_ path: String, option: String) throws {
        if FileManager.default.fileExists(atPath: path) {
            throw UsageError("\(option) \(path): a file of that name exists and has no .mp4, .mov or .mkv ending; give the file name with its ending")
        }
    }

    /// Whether the file at `url` begins like a video file (an MP4/MOV box or Matroska's
    /// header): what a frame log must never replace.
    static func looksLikeVideo(_ url: URL) -> Bool {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return false }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 12)) ?? Data())
        if head.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) { return true }
        guard head.count >= 8 else { return false }
        let type = String(decoding: head[4..<8], as: UTF8.self)
        return ["ftyp", "moov", "moof", "mdat", "free", "skip", "wide", "styp"].contains(type)
    }

    /// The user's videos folder: `XDG_VIDEOS_DIR` from the environment, else from
    /// `user-dirs.dirs`, else `~/Videos`.
    public static func videosDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        Recorder.defaultOutputDirectory(environment: environment)
    }

    /// A new dated file in `folder`, created empty so that no other recording takes the name
    /// (``Recorder/reserveDatedFile(in:container:date:)``, its hints in the command line's words).
    /// The caller records into it (it is empty and its own) or gives it back.
    public static func reserveDatedFile(in folder: URL, container: Container, date: Date = Date()) throws -> URL {
        do {
            return try Recorder.reserveDatedFile(in: folder, container: container, date: date)
        } catch let error as ReelError {
            throw CommandLineHints.rephrased(error)
        }
    }
}
