import Foundation
import Testing
import ReelCore
import ReelSystem
@testable import ReelFFmpeg
import ReelTestSupport

/// HLS playlists left without their end, as a kill leaves an event stream into a folder:
/// closing them keeps the whole segments, lists a whole one the writer had not listed yet,
/// leaves out what is missing or cut short, and gives the playlist its end so that players
/// stop waiting. The streams are FFmpeg's own HLS writer's (the one ``LiveStream`` uses), made
/// by the ffmpeg command from its test source.
@Suite(.serialized) struct PlaylistRecoveryTests {
    /// An event stream of four 2-second segments of FFmpeg's counting test picture, closed as
    /// a clean stop closes it; `fmp4` for fragmented MP4 segments.
    static func event(in folder: URL, fmp4: Bool = false) throws -> URL {
        let playlist = folder.appendingPathComponent("index.m3u8")
        var arguments = ["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30", "-t", "8",
                         "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-f", "hls", "-hls_time", "2",
                         "-hls_list_size", "0", "-hls_playlist_type", "event",
                         "-hls_segment_filename", folder.appendingPathComponent(fmp4 ? "index-%05d.m4s" : "index-%05d.ts").path]
        if fmp4 { arguments += ["-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "index-init.mp4"] }
        let r = try Subprocess.run(arguments + [playlist.path])
        try #require(r.status == 0, "\(r.stderr)")
        return playlist
    }

    /// The playlist's lines without its end, and without its last `unlisted` segments.
    static func cutOff(_ playlist: URL, unlisting unlisted: Int = 0) throws {
        var lines = try String(contentsOf: playlist, encoding: .utf8).split(separator: "\n").map(String.init)
        lines.removeAll { $0 == "#EXT-X-ENDLIST" }
        lines.removeLast(2 * unlisted)
        try (lines.joined(separator: "\n") + "\n").write(to: playlist, atomically: true, encoding: .utf8)
    }

    /// ffmpeg reading the whole stream through its playlist: the frames it decodes, or `nil`
    /// if it does not end by itself (it waits for more segments of a stream without its end).
    static func framesThroughPlaylist(_ playlist: URL) throws -> Int? {
        let r = try Subprocess.run(["timeout", "20", "ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                                    "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", playlist.path])
        guard r.status == 0 else { return nil }
        // The stream is shown in its program and on its own: the first count.
        return r.output.split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.first
    }

    static func lines(_ playlist: URL) throws -> [String] {
        try String(contentsOf: playlist, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    @Test(arguments: [false, true])
    func aPlaylistWithoutItsEndIsClosed(_ fmp4: Bool) throws {
        let dir = try TemporaryDirectory()
        let playlist = try Self.event(in: dir.url, fmp4: fmp4)
        let finished = try Self.lines(playlist)
        #expect(!PlaylistRecovery.isOpen(playlist))
        try Self.cutOff(playlist)
        #expect(PlaylistRecovery.isOpen(playlist))
        #expect(PlaylistRecovery.playlist(inFolder: dir.url) == playlist)
        let summary = try PlaylistRecovery.close(playlist)
        #expect(!summary.wasClosed && summary.segments == 4 && summary.added.isEmpty && summary.leftOut.isEmpty, "\(summary)")
        #expect(abs(summary.duration.seconds - 8) < 0.01, "\(summary.duration)")
        #expect(try Self.lines(playlist) == finished)
        #expect(try Self.framesThroughPlaylist(playlist) == 240)
        #expect(!PlaylistRecovery.isOpen(playlist))
        // Closed already: nothing to do, nothing written.
        let again = try PlaylistRecovery.close(playlist)
        #expect(again.wasClosed && again.segments == 4)
        #expect(try Self.lines(playlist) == finished)
    }

    /// The segments written whole just before the kill, which the playlist did not list yet
    /// (one, or a playlist cut short by more), are listed with the durations they play: only
    /// the first was, and the whole ones after it were left unlisted without a word (s43).
    @Test(arguments: [false, true], [1, 3])
    func wholeSegmentsNotListedYetAreAdded(_ fmp4: Bool, unlisted: Int) throws {
        let dir = try TemporaryDirectory()
        let playlist = try Self.event(in: dir.url, fmp4: fmp4)
        let finished = try Self.lines(playlist)
        try Self.cutOff(playlist, unlisting: unlisted)
        let summary = try PlaylistRecovery.close(playlist)
        let added = (4 - unlisted..<4).map { String(format: "index-%05d.%@", $0, fmp4 ? "m4s" : "ts") }
        #expect(summary.added == added && summary.segments == 4, "\(summary)")
        #expect(abs(summary.duration.seconds - 8) < 0.05, "\(summary.duration)")
        #expect(try Self.lines(playlist).count == finished.count)
        #expect(try Self.framesThroughPlaylist(playlist) == 240)
    }

    /// A segment cut short (listed, or not listed yet) is left out and its file left as it is;
    /// a missing one is left out and the segments after it stay, from a discontinuity (every
    /// one after it was left out, and a stream whose first segment was gone could not be
    /// closed at all). A listed segment left out makes the recovery incomplete.
    @Test func segmentsCutShortOrMissingAreLeftOut() throws {
        for (listed, damage) in [(true, "cut"), (false, "cut"), (true, "missing"), (true, "first missing")] {
            let dir = try TemporaryDirectory()
            let playlist = try Self.event(in: dir.url)
            let last = dir.url.appendingPathComponent("index-00003.ts"), third = dir.url.appendingPathComponent("index-00002.ts")
            try Self.cutOff(playlist, unlisting: listed ? 0 : 1)
            if damage == "cut" {
                let bytes = try Data(contentsOf: last)
                try bytes.prefix(bytes.count / 2 + 1).write(to: last)
            } else {
                try FileManager.default.removeItem(at: damage == "missing" ? third : dir.url.appendingPathComponent("index-00000.ts"))
            }
            let torn = try? Data(contentsOf: last)
            let summary = try PlaylistRecovery.close(playlist)
            let expected: [PlaylistRecovery.LeftOutSegment] = switch damage {
            case "cut": [.init(name: "index-00003.ts", reason: "cut short", wasListed: listed)]
            case "missing": [.init(name: "index-00002.ts", reason: "missing")]
            default: [.init(name: "index-00000.ts", reason: "missing")]
            }
            #expect(summary.leftOut == expected, "\(listed) \(damage)")
            #expect(summary.segments == 3, "\(listed) \(damage)")
            #expect(summary.isComplete == (damage == "cut" && !listed), "\(listed) \(damage)")
            #expect(try Self.framesThroughPlaylist(playlist) == summary.segments * 60, "\(listed) \(damage)")
            let text = try String(contentsOf: playlist, encoding: .utf8)
            #expect(text.contains("#EXT-X-DISCONTINUITY\n#EXTINF:2.000000,\nindex-00003.ts") == (damage == "missing"), "\(text)")
            #expect(!text.contains("#EXT-X-DISCONTINUITY") || damage == "missing", "\(text)")
            #expect((try? Data(contentsOf: last)) == torn, "the file left out is left as it was")
        }
    }

    /// A folder that a stream is writing right now (its lock held) is refused, and not called
    /// cut off.
    @Test func aFolderBeingWrittenIsLeftAlone() throws {
        let dir = try TemporaryDirectory()
        let playlist = try Self.event(in: dir.url)
        try Self.cutOff(playlist)
        let before = try Data(contentsOf: playlist)
        let lock = try RecordingLock.lockExisting(dir.url, exclusive: true)
        defer { lock.release() }
        #expect(!PlaylistRecovery.isOpen(playlist))
        #expect(throws: ReelError.self) { try PlaylistRecovery.close(playlist) }
        #expect(try Data(contentsOf: playlist) == before)
    }

    /// What is not a media playlist of its folder's segments, and the placeholder a stream
    /// takes before its first segment, are refused clearly; the empty placeholder is removed
    /// (it blocked the folder for the next stream, and recovering the folder did not say why).
    @Test func whatIsNotAPlaylistIsRefused() throws {
        let dir = try TemporaryDirectory()
        let cases: [(String, ReelError.Code)] = [
            ("", .nothingRecorded),
            ("not a playlist\n", .invalidMedia),
            ("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000\nlow/index.m3u8\n", .invalidMedia),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n../elsewhere.ts\n", .invalidMedia),
        ]
        for (i, (text, code)) in cases.enumerated() {
            let url = dir.url.appendingPathComponent("p\(i).m3u8")
            try Data(text.utf8).write(to: url)
            do {
                _ = try PlaylistRecovery.close(url)
                Issue.record("closed \(text)")
            } catch let error as ReelError {
                #expect(error.code == code, "\(text)")
            }
            if text.isEmpty {
                #expect(!FileManager.default.fileExists(atPath: url.path), "the empty placeholder is removed")
            } else {
                #expect(try Data(contentsOf: url) == Data(text.utf8))
            }
        }
        // Not a playlist beside a stream's segments: not written over, and said with the way to
        // rebuild (it was taken for a folder of clips).
        let stream = try TemporaryDirectory()
        let playlist = try Self.event(in: stream.url)
        try Data("garbage\n".utf8).write(to: playlist)
        #expect(PlaylistRecovery.playlist(inFolder: stream.url) == playlist)
        do {
            _ = try PlaylistRecovery.close(playlist)
            Issue.record("closed garbage")
        } catch let error as ReelError {
            #expect(error.code == .invalidMedia && error.message.contains("segments are beside it") && (error.hint ?? "").contains("rebuilt"), "\(error)")
        }
        #expect(try Data(contentsOf: playlist) == Data("garbage\n".utf8))
    }

    /// A folder whose playlist a full disk emptied (or that lost it) while its segments are
    /// there: the playlist is rebuilt from the segments that are whole, in order (the fMP4
    /// initialisation segment in its map), a torn last one left out and left as it is, and
    /// ended, so the stream plays every frame the whole segments hold. It was said to hold
    /// nothing, and the empty playlist removed.
    @Test(arguments: [false, true])
    func aPlaylistEmptiedOrLostIsRebuiltFromTheWholeSegments(_ fmp4: Bool) throws {
        for lost in ["emptied", "missing"] {
            let dir = try TemporaryDirectory()
            let playlist = try Self.event(in: dir.url, fmp4: fmp4)
            let ext = fmp4 ? "m4s" : "ts"
            // The segment the full disk cut: its first 4096 bytes.
            let torn = dir.url.appendingPathComponent("index-00004.\(ext)")
            try Data(try Data(contentsOf: dir.url.appendingPathComponent("index-00003.\(ext)")).prefix(4096)).write(to: torn)
            if lost == "emptied" { try Data().write(to: playlist) } else { try FileManager.default.removeItem(at: playlist) }
            #expect(PlaylistRecovery.playlist(inFolder: dir.url) == playlist, "\(lost)")
            let summary = try PlaylistRecovery.close(playlist)
            #expect(summary.rebuilt && summary.segments == 4, "\(lost): \(summary)")
            #expect(summary.added == (0..<4).map { "index-0000\($0).\(ext)" }, "\(lost): \(summary)")
            #expect(summary.leftOut == [.init(name: "index-00004.\(ext)", reason: "cut short", wasListed: false)], "\(lost): \(summary)")
            #expect(summary.isComplete)
            #expect(abs(summary.duration.seconds - 8) < 0.05, "\(summary.duration)")
            let text = try String(contentsOf: playlist, encoding: .utf8)
            #expect(text.hasSuffix("#EXT-X-ENDLIST\n") && text.contains("#EXT-X-MAP:URI=\"index-init.mp4\"") == fmp4, "\(text)")
            #expect(try Self.framesThroughPlaylist(playlist) == 240, "\(lost)")
            #expect(try Data(contentsOf: torn).count == 4096, "the torn segment is left as it is")
        }
        // Nothing whole at all: said so, and nothing is removed while a segment file is there.
        let dir = try TemporaryDirectory()
        let playlist = dir.url.appendingPathComponent("index.m3u8")
        try Data().write(to: playlist)
        try Data(repeating: 0, count: 4096).write(to: dir.url.appendingPathComponent("index-00000.ts"))
        #expect(throws: ReelError.self) { try PlaylistRecovery.close(playlist) }
        #expect(FileManager.default.fileExists(atPath: playlist.path))
    }
}
