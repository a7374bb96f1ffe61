import Foundation
import ReelFFmpeg

extension RecorderPipeline {
    /// Places the markers due by session time `time` (all with `nil`) on the recorded timeline:
    /// in clip mode into the clip they fall in (a marker in a pause at the end of the clip
    /// before, which is where the next one begins in the merged file), else into the file's
    /// chapters. A marker at the instant of the chapter before (less than a frame after it:
    /// several asked for in one pause land at one place) joins that chapter, its title added.
    func placeMarkers(upTo time: MediaTime?) throws {
        guard timeline.hasBegun, let due = takeMarkers?(time), !due.isEmpty else { return }
        // Scheduled for a file that cannot keep them: none is placed (or said to be).
        guard writesFile && container.holdsChapters else { return }
        let frame = settings.video.frameRate.frameDuration
        for marker in due {
            // Where the timeline puts it, though the pictures may not have got there yet (from a
            // slow source they come later than the sound, which made it due): held to what was
            // recorded, it landed where they had got to, early. At the end, within the recording.
            var at = machine.recordedLength(from: .zero, to: marker.start)
            if time == nil { at = min(at, recordedDuration) }
            // A marker at the instant of the chapter before joins it, in its clip: a marker in a
            // pause is at the end of one clip and one at the resume's slot at the start of the
            // next, the same instant of the merged file. Joined only within one clip, two
            // markers in one pause were two chapters when the resume came between their placing
            // (the live events said "p2" alone and numbered the next untitled chapter as if there
            // were one more; the merged file joined them: `reel control` on CI).
            let joins = lastChapter.map { at < $0.start + frame } ?? false
            let clip = clipFiles == nil ? nil : joins ? lastChapter?.clip : timeline.intervals.lastIndex { $0.offset <= at } ?? 0
            if joins {
                if !marker.title.isEmpty { lastChapter?.titles.append(marker.title) }
            } else {
                chaptersPlaced += 1
                lastChapter = (at, clip, marker.title.isEmpty ? [] : [marker.title])
            }
            guard let chapter = lastChapter else { continue }
            let title = chapter.titles.isEmpty ? Chapter.defaultTitle(number: chaptersPlaced)
                                               : chapter.titles.joined(separator: Chapter.titleSeparator)
            let placed = Chapter(start: chapter.start, title: title)
            if let clip {
                let start = timeline.intervals.indices.contains(clip) ? timeline.intervals[clip].offset : .zero
                try session.addChapter(Chapter(start: placed.start - start, title: title), toClipAt: clipURL(clip), replacingLast: joins)
            } else {
                if joins, !chapters.isEmpty { chapters[chapters.count - 1] = placed } else { chapters.append(placed) }
                // Beside the file as they come, for a recovery of it cut off.
                writer.movie?.keepChapters(chapters)
            }
            markerPlaced?(placed)
        }
    }
}
