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

    /// What goes between the titles of markers that became one chapter: "A / B".
    package static let titleSeparator = " / "

    /// How close two chapters' starts are to be one instant when nothing better is known (a
    /// recorder uses a frame): a hundredth of a second, more than the rounding of any file's
    /// times (an MKV's are in milliseconds), less than anything a player tells apart.
    package static let oneInstant = MediaTime(value: 1, timescale: 100)

    /// `chapters` in time order, those that begin at one instant (within `tolerance` after the
    /// one before) made one chapter at the first one's start with their titles joined ("A /
    /// B"): chapters of no length are dropped by some readers (an MKV's ffprobe lists the
    /// empty one and loses the other) and overlap in others (an MP4's), so no title would be
    /// sure to be seen.
    package static func joiningCoincident(_ chapters: [Chapter], within tolerance: MediaTime = oneInstant) -> [Chapter] {
        var joined: [Chapter] = []
        for chapter in chapters.sorted(by: { $0.start < $1.start }) {
            if let last = joined.last, chapter.start < last.start + tolerance {
                joined[joined.count - 1].title += titleSeparator + chapter.title
            } else {
                joined.append(chapter)
            }
        }
        return joined
    }
}
