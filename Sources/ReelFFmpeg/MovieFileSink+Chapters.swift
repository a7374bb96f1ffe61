import Foundation
import ReelCore

/// The chapters of a movie file: given for the finish, and kept beside the file as they are
/// placed so that a recovery of the file cut off keeps them (``ChapterSidecar``).
extension MovieFileSink {
    /// Gives the file `chapters` (on its timeline), the last ending at `end`: written when it
    /// is finished (``finish()``). A file cut off before then has none.
    package func setChapters(_ chapters: [Chapter], end: MediaTime) {
        self.chapters = (chapters, end)
        spareRoom.chapters(taking: MP4ChapterList.box(chapters).count)
    }

    /// Keeps `chapters` (all so far, on the file's timeline) beside the file as they are
    /// placed (``ChapterSidecar``), so that a recovery of the file cut off keeps them; the list
    /// goes once the file is finished with them. Best effort: a list that cannot be written
    /// (a full disk) costs only what a crash would take, and the finished file has them anyway.
    package func keepChapters(_ chapters: [Chapter]) {
        spareRoom.chapters(taking: MP4ChapterList.box(chapters).count)
        guard !placement.isProvisional else {
            chaptersWaitingForTheName = chapters
            return
        }
        listChapters(chapters)
    }

    func listChapters(_ chapters: [Chapter]) {
        guard let fileIdentity else { return }
        listsChapters = true
        let recording = configuration.url
        chapterWriter.async { try? ChapterSidecar.write(chapters, of: fileIdentity, at: recording) }
    }

    /// The file took the name of the one it replaced: the list beside the name is now this
    /// file's (its chapters so far), or, without one yet, of no file any more and goes.
    func chaptersTakeTheName() {
        if let waiting = chaptersWaitingForTheName {
            chaptersWaitingForTheName = nil
            listChapters(waiting)
        } else {
            let recording = configuration.url, file = fileIdentity
            chapterWriter.async { ChapterSidecar.remove(for: recording, unlessOf: file) }
        }
    }

    /// The file is gone (nothing was recorded into it): the list of its markers goes too.
    package func removeChaptersOfAGoneFile() {
        removeChapterList()
    }

    /// The file holds its chapters (or is gone): its list beside the name goes.
    func removeChapterList() {
        // What was queued first (a stale list removed when the file took the name) is done by
        // the time the file is: a recording that ended had left it there for a moment.
        chapterWriter.sync {}
        guard listsChapters, let fileIdentity else { return }
        let recording = configuration.url
        chapterWriter.sync { ChapterSidecar.remove(for: recording, ifOf: fileIdentity) }
    }
}
