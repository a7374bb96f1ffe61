import Foundation
import Testing
import ReelCore
import ReelFFmpeg
import ReelTestSupport

/// HEVC in MP4 and MOV is tagged `hvc1`, the only HEVC QuickTime and Safari play (libavformat
/// would write `hev1`). Merging is tested in MergerTests.
@Suite struct HEVCTagTests {
    /// HEVC in MP4 and MOV carries the hvc1 sample entry: while recording (the fragmented
    /// file that a crash leaves), once finalised, and after remuxing.
    @Test(arguments: [Container.mp4, .mov])
    func hevcIsTaggedHvc1(_ container: Container) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("h.\(container.fileExtension)")
        let settings = VideoSettings(codec: .hevc, preset: "ultrafast")
        let writer = try PatternFile.write(url, settings: settings, size: PixelSize(width: 160, height: 120), frames: 45, finish: false)
        #expect(try MediaProbe.probe(url).videoStreams.first?.codecTag == "hvc1", "the fragmented file")
        _ = try writer.finish()
        #expect(try MediaProbe.probe(url).videoStreams.first?.codecTag == "hvc1", "the finalised file")

        let mkv = dir.url.appendingPathComponent("h.mkv")
        try PatternFile.write(mkv, settings: settings, size: PixelSize(width: 160, height: 120), frames: 15)
        let remuxed = dir.url.appendingPathComponent("remuxed.\(container.fileExtension)")
        try Remuxer.remux(mkv, to: remuxed, container: container)
        let video = try #require(try MediaProbe.probe(remuxed).videoStreams.first)
        #expect(video.codecTag == "hvc1", "remuxed from MKV")
        #expect(video.frameCount == 15)
    }
}
