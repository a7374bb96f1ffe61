import Foundation
import Testing
import ReelCore
@testable import ReelFFmpeg
import ReelTestSupport

/// FFmpeg 5.1's MP4 reader spins for about 1.5 s per fragment run on a fragmented file with a
/// track that has no usable ID (the fuzzer found one; CI's fuzz run timed out on it). Reel
/// refuses such a file before handing it over, and reads every real recording as before.
@Suite struct FragmentedTrackCheckTests {
    static let fuzz = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    @Test func theFileTheFuzzerFoundIsRefusedAsDamaged() throws {
        let url = Self.fuzz.appendingPathComponent("regressions/slow-fragment-of-track-without-id.mp4")
        let error = #expect(throws: ReelError.self) { try InputFile(url: url) }
        #expect(error?.code == .invalidMedia)
        #expect(error?.message.contains("track 2 has no usable track ID") == true, "\(String(describing: error))")
    }

    @Test(arguments: ["frag.mp4", "final.mp4", "plain.mov", "cut1-frag.mp4", "reel-cut.mp4", "reel-final.mp4", "opus.mkv", "audioonly.m4a"])
    func realRecordingsPass(_ name: String) throws {
        try FragmentedTrackCheck.check(Self.fuzz.appendingPathComponent("seeds/\(name)"))
    }

    /// The rule on its own, on box sequences: only a fragment after an ID-less track is refused.
    @Test func followsLibavformatsReadingOrder() throws {
        let url = URL(fileURLWithPath: "/x.mp4")
        func tkhd(_ id: UInt32, version: UInt8 = 0) -> [UInt8] {
            var w = ByteWriter()
            w.u8(version); w.u24(0)
            if version == 1 { w.u64(0); w.u64(0) } else { w.u32(0); w.u32(0) }
            w.u32(id)
            return w.bytes
        }
        var ok = FragmentedTrackCheck.TrackIDs()
        try ok.take("trak", body: { [] }, in: url)
        try ok.take("tkhd", body: { tkhd(1) }, in: url)
        try ok.take("trak", body: { [] }, in: url)
        try ok.take("tkhd", body: { tkhd(2, version: 1) }, in: url)
        try ok.take("moof", body: { [] }, in: url)

        // A moof before any track, then a track without tkhd: refused only at the next moof.
        var late = FragmentedTrackCheck.TrackIDs()
        try late.take("moof", body: { [] }, in: url)
        try late.take("trak", body: { [] }, in: url)
        #expect(throws: ReelError.self) { try late.take("moof", body: { [] }, in: url) }

        // An ID above 2^31 - 1 is as bad as none; a later tkhd that fixes it makes it fine.
        var high = FragmentedTrackCheck.TrackIDs()
        try high.take("trak", body: { [] }, in: url)
        try high.take("tkhd", body: { tkhd(0x8000_0001) }, in: url)
        #expect(throws: ReelError.self) { try high.take("moof", body: { [] }, in: url) }
        try high.take("tkhd", body: { tkhd(7) }, in: url)
        try high.take("moof", body: { [] }, in: url)

        // Found inside a box's bytes only with a size that fits.
        var scanned = FragmentedTrackCheck.TrackIDs()
        var w = ByteWriter()
        w.box("moov") { $0.box("trak") { $0.append([1, 2, 3]) } }
        w.append(Array("Soundtrak moof".utf8))
        try scanned.scan(w.bytes, from: 8, in: url)
        #expect(scanned.usable == [false])
    }
}
