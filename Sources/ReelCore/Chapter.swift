/// A chapter of a recorded file: where it begins on the file's timeline and its title.
///
/// Recorders put one at each marker (`Recorder.addMarker(_:)`): MP4 and MOV files carry them
/// as a chapter list (`chpl`), MKV files as Matroska chapters; players list them, and
/// `ffprobe -show_chapters` prints them.
public struct Chapter: Sendable, Hashable {
    /// Where the chapter begins, from the start of the file (recorded time: pauses left out).
    public var start: MediaTime
    /// The chapter's title.
    public var title: String

    /// A chapter beginning at `start`, titled `title`.
    public init(start: MediaTime, title: String) {
        self.start = start
        self.title = title
    }

    /// The longest title a chapter keeps, in bytes of UTF-8: an MP4's chapter list holds no
    /// more (a recorder refuses a longer marker title rather than cut it silently).
    public static let maximumTitleBytes = 255

    /// Those of `chapters` that begin before `end`, in time order: a chapter at or past the end
    /// of a file (a marker placed just before a crash, whose media was never written) has
    /// nothing to show and is left out.
    public static func beginning(_ chapters: [Chapter], before end: MediaTime) -> [Chapter] {
        chapters.sorted { $0.start < $1.start }.filter { $0.start < end }
    }

    /// The title of the `number`th marker (from 1) when none was given: "Chapter 3".
    public static func defaultTitle(number: Int) -> String { "Chapter \(number)" }
}
