import Foundation

/// Chapter markers kept in the clips they fall in.
extension RecordingSession {
    /// Puts `chapter` (its time from the clip's start) into the clip in file `url`, finished
    /// or still being recorded, and into the manifest: a recovery keeps it. `replacingLast`:
    /// it takes the place of the clip's last chapter (markers joined into one).
    func addChapter(_ chapter: Chapter, toClipAt url: URL, replacingLast: Bool = false) throws {
        let name = url.lastPathComponent
        func put<Item>(_ item: Item, into list: inout [Item]) {
            if replacingLast && !list.isEmpty { list[list.count - 1] = item } else { list.append(item) }
        }
        try write(state.withLock { s in
            if let i = s.clips.lastIndex(where: { $0.url.lastPathComponent == name }) {
                put(chapter, into: &s.clips[i].chapters)
            } else {
                put(chapter, into: &s.pendingChapters[name, default: []])
            }
            return Self.update(&s) { m in
                guard let i = m.clips.firstIndex(where: { $0.file == name }) else { return }
                var entries = m.clips[i].chapters ?? []
                put(ClipsManifest.ChapterEntry(chapter), into: &entries)
                m.clips[i].chapters = entries
            }
        })
    }
}
