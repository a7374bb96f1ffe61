import Foundation

/// What became of a recording's file while it was recorded, when someone renamed, moved or
/// deleted it (a file manager, a clean-up script): where the recording went instead, so that
/// it can be said (``RecordingSummary``'s `relocation`).
public enum FileRelocation: Sendable, Hashable {
    /// Renamed or moved on the same disk away from `from`: finalised where it went.
    case moved(from: URL)
    /// Deleted while recorded (or moved to another disk, which copies and deletes): what was
    /// recorded was all still held by the writer and was copied back to `to`, at its name or,
    /// when the name was taken again meanwhile, a free one beside it.
    case copiedBack(to: URL)
    /// Deleted while recorded, and its folder took nothing more (deleted too, or made
    /// read-only): the recording was saved in another folder instead. `from` is where it was.
    case savedElsewhere(from: URL)
}
