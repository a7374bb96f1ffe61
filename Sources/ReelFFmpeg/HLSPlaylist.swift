import Foundation
import ReelCore

/// An HLS media playlist as FFmpeg's HLS writer makes it, read line by line: the header tags,
/// then each segment's tags (`#EXTINF` and any others) and its name, perhaps the end. What
/// ``PlaylistRecovery`` reads and writes back; tags it does not know are kept as they were.
struct HLSPlaylist {
    struct Segment {
        var name: String
        var duration: MediaTime
        /// The tag lines before its name other than `#EXTINF` (a discontinuity…), as they were.
        var tags: [String] = []
    }

    /// The file's name, for naming its segments.
    var url: URL
    /// The lines before the first segment (`#EXTM3U`, version, target duration, sequence,
    /// type, the initialisation segment's `#EXT-X-MAP`…).
    var header: [String] = []
    var segments: [Segment] = []
    /// Whether it has its end (`#EXT-X-ENDLIST`).
    var isClosed = false

    /// Reads the playlist at `url`. Throws `.invalidMedia` for anything that is not an HLS
    /// media playlist (a master playlist lists streams, not segments), `.nothingRecorded`
    /// for an empty file (the name a stream takes before its first segment).
    init(_ url: URL) throws {
        let data = try Data(contentsOf: url, options: .mappedIfSafe)
        guard !data.isEmpty else {
            throw ReelError(.nothingRecorded, "\(url.path) is empty: the stream was cut off before its first segment",
                            hint: "there is nothing to close")
        }
        guard data.count <= 64 << 20, let text = String(data: data, encoding: .utf8) else { throw Self.notAPlaylist(url) }
        try self.init(text: text, url: url)
    }

    /// Reads the playlist `text` of the file at `url` (as FFmpeg's HLS writer made it, before
    /// it is on the disk). Throws `.invalidMedia` for anything that is not an HLS media playlist.
    init(text: String, url: URL) throws {
        self.url = url
        guard text.hasPrefix("#EXTM3U") else { throw Self.notAPlaylist(url) }
        var pending: (duration: MediaTime, tags: [String])?
        var pendingTags: [String] = []
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty else { continue }
            if line.hasPrefix("#EXT-X-STREAM-INF") { throw Self.notAPlaylist(url) }
            if line == "#EXT-X-ENDLIST" {
                isClosed = true
            } else if line.hasPrefix("#EXTINF:") {
                let value = line.dropFirst("#EXTINF:".count).prefix { $0 != "," }
                guard let seconds = Double(value), seconds >= 0, seconds < 86_400 else { throw Self.notAPlaylist(url) }
                pending = (MediaTime(seconds: seconds), pendingTags)
                pendingTags = []
            } else if line.hasPrefix("#") {
                if pending != nil {
                    pending!.tags.append(line)
                } else if segments.isEmpty && pendingTags.isEmpty && !line.hasPrefix("#EXT-X-DISCONTINUITY") {
                    header.append(line)
                } else {
                    pendingTags.append(line)
                }
            } else {
                guard let segment = pending else { throw Self.notAPlaylist(url) }
                // Only names in the playlist's folder: a path or an address is not ours to check.
                guard !line.contains("/"), line != "..", line != "." else { throw Self.notAPlaylist(url) }
                segments.append(Segment(name: line, duration: segment.duration, tags: segment.tags))
                pending = nil
            }
        }
        guard !segments.isEmpty || header.contains(where: { $0.hasPrefix("#EXT-X-TARGETDURATION") }) else {
            throw Self.notAPlaylist(url)
        }
    }

    private static func notAPlaylist(_ url: URL) -> ReelError {
        ReelError(.invalidMedia, "\(url.path) is not an HLS playlist of segments in its folder",
                  hint: "give the index.m3u8 of a stream into a folder (or the folder)")
    }

    /// The total of the segments' durations.
    var duration: MediaTime { segments.reduce(MediaTime.zero) { $0 + $1.duration } }

    /// The initialisation segment's name (`#EXT-X-MAP:URI="…"`): segments are fragmented MP4.
    var initialisationSegment: String? {
        guard let map = header.first(where: { $0.hasPrefix("#EXT-X-MAP:") }),
              let start = map.range(of: "URI=\"") else { return nil }
        let rest = map[start.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
    }

    var isFragmentedMP4: Bool { initialisationSegment != nil }

    /// The name of the segment after `name` as FFmpeg numbers them (the last run of digits
    /// before the extension, one more, as wide), or of the first (`NAME-00000.ts`, `.m4s`)
    /// when none is listed.
    func nextSegmentName(after listed: String?) -> String? {
        guard let listed else {
            let stem = url.deletingPathExtension().lastPathComponent
            return "\(stem)-00000.\(isFragmentedMP4 ? "m4s" : "ts")"
        }
        let name = (listed as NSString).deletingPathExtension
        let suffix = String(listed.dropFirst(name.count))
        guard let last = name.lastIndex(where: \.isNumber) else { return nil }
        var first = last
        while first > name.startIndex, name[name.index(before: first)].isNumber { first = name.index(before: first) }
        let digits = name[first...last]
        guard digits.count <= 18, let number = Int64(digits) else { return nil }
        var next = String(number + 1)
        if next.count < digits.count { next = String(repeating: "0", count: digits.count - next.count) + next }
        return String(name[..<first]) + next + String(name[name.index(after: last)...]) + suffix
    }

    /// The playlist with its end, as text.
    var closedText: String {
        var lines = header
        for segment in segments {
            lines += segment.tags
            lines.append(String(format: "#EXTINF:%.6f,", segment.duration.seconds))
            lines.append(segment.name)
        }
        lines.append("#EXT-X-ENDLIST")
        return lines.joined(separator: "\n") + "\n"
    }
}
