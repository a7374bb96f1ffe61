import Foundation
import Testing
import ReelCore
import ReelFFmpeg
import ReelTestSupport

/// The encoder settings a user can choose do what they say for every codec: each preset
/// changes the encoder's work, profiles write what they name, quality and keyframe settings
/// reach the encoder, and the smallest stated size encodes.
@Suite struct EncoderOptionTests {
    /// The settings x264 and x265 say they used: the "options: …" text they put in the stream.
    func encoderOptions(_ url: URL) throws -> String? {
        let bytes = [UInt8](try Data(contentsOf: url))
        let marker = Array("options: ".utf8)
        guard let start = (0...(bytes.count - marker.count)).first(where: { bytes[$0..<($0 + marker.count)].elementsEqual(marker) }) else {
            return nil
        }
        return String(decoding: bytes[start...].prefix { $0 != 0 }, as: UTF8.self)
    }

    /// Every preset, for every codec, gives the encoder other work. x264 and x265 say in the
    /// stream which settings they used, and no two presets' settings are alike; VP9 and AV1
    /// say nothing, but no two presets encode the same frames to the same packets. (VP9 and
    /// AV1 used to ignore the preset altogether.)
    @Test(arguments: VideoCodec.allCases)
    func eachPresetChangesTheEncodersWork(_ codec: VideoCodec) throws {
        let dir = try TemporaryDirectory()
        var seen: [String: String] = [:]
        for preset in codec.presets {
            let url = dir.url.appendingPathComponent("\(preset).mkv")
            try PatternFile.write(url, settings: VideoSettings(codec: codec, preset: preset), frames: codec == .av1 ? 4 : 8)
            let work: String
            switch codec {
            case .h264, .hevc: work = try #require(try encoderOptions(url), "\(codec) \(preset) states its options")
            case .vp9, .av1: work = try MediaProbe.packetDigest(url)
            }
            #expect(seen[work] == nil, "\(codec) \(preset) does the same work as \(seen[work] ?? "")")
            seen[work] = preset
        }
        #expect(seen.count == 10)
    }

    /// The 10-bit profiles write 10-bit video; the 8-bit ones 8-bit.
    @Test(arguments: [(VideoCodec.hevc, "main10", "Main 10", "yuv420p10le"), (.hevc, "main", "Main", "yuv420p"),
                      (.h264, "high10", "High 10", "yuv420p10le"), (.h264, "baseline", "Constrained Baseline", "yuv420p"),
                      (.h264, "main", "Main", "yuv420p"), (.h264, "high", "High", "yuv420p"),
                      (.vp9, "2", "Profile 2", "yuv420p10le"), (.vp9, "0", "Profile 0", "yuv420p"),
                      (.av1, "main", "Main", "yuv420p")])
    func profilesWriteWhatTheyName(_ codec: VideoCodec, _ profile: String, _ probed: String, _ pixelFormat: String) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("p.\(codec == .vp9 || codec == .av1 ? "mkv" : "mp4")")
        var settings = VideoSettings(codec: codec, preset: "veryfast", profile: profile)
        settings.frameRate = FrameRate(30)
        try PatternFile.write(url, settings: settings, size: PixelSize(width: 160, height: 120), frames: 30)
        let video = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(video.profile == probed)
        #expect(video.pixelFormat == pixelFormat)
        #expect(video.frameCount == 30)
        // The picture survives the trip through 10 bits: every frame's counter reads back.
        let counters = try MediaProbe.decodeLuma(url, width: 160, height: 120).map(\.counter)
        #expect(counters == (0..<30).map { Int64($0) })
    }

    /// A profile the codec does not have is refused before any file is made, with the list.
    @Test func unknownProfilesAreRefusedWithTheList() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("x.mp4")
        let error = try #require(throws: ReelError.self) {
            try PatternFile.write(url, settings: VideoSettings(codec: .hevc, profile: "high"))
        }
        #expect(error.code == .invalidConfiguration)
        #expect(error.message == "hevc has no profile 'high'", "\(error.message)")
        #expect(error.hint == "use one of: main, main10")
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    /// The smallest and the largest stated sizes encode with every codec.
    @Test(arguments: VideoCodec.allCases)
    func theSmallestStatedSizeEncodes(_ codec: VideoCodec) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("tiny.mkv")
        try PatternFile.write(url, settings: VideoSettings(codec: codec, preset: "ultrafast"), size: VideoSettings.minimumSize)
        let video = try #require(try MediaProbe.probe(url).videoStreams.first)
        #expect(video.width == 16 && video.height == 16 && video.frameCount == 8)
    }

    /// Constant quality runs 0–51 for x264/x265 and 0–63 for VP9/AV1, and each end encodes.
    @Test func qualityRangesFollowTheCodec() throws {
        #expect(VideoCodec.h264.crfRange == 0...51 && VideoCodec.hevc.crfRange == 0...51)
        #expect(VideoCodec.vp9.crfRange == 0...63 && VideoCodec.av1.crfRange == 0...63)
        let dir = try TemporaryDirectory()
        for codec in VideoCodec.allCases {
            for q in [codec.crfRange.lowerBound, codec.crfRange.upperBound] {
                let url = dir.url.appendingPathComponent("\(codec)-\(q).mkv")
                try PatternFile.write(url, settings: VideoSettings(codec: codec, preset: "ultrafast", rateControl: .crf(q)))
                #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == 8, "\(codec) CRF \(q)")
            }
            let error = try #require(throws: ReelError.self) {
                try PatternFile.write(dir.url.appendingPathComponent("bad.mkv"), settings: VideoSettings(codec: codec, rateControl: .crf(codec.crfRange.upperBound + 1)))
            }
            #expect(error.hint == "use \(codec.crfRange.lowerBound) to \(codec.crfRange.upperBound) for \(codec.rawValue)", "\(error.hint ?? "")")
        }
        // A lower CRF spends more bits: the setting reaches VP9 and AV1 beyond 51.
        for codec in [VideoCodec.vp9, .av1] {
            let fine = dir.url.appendingPathComponent("\(codec)-fine.mkv"), coarse = dir.url.appendingPathComponent("\(codec)-coarse.mkv")
            try PatternFile.write(fine, settings: VideoSettings(codec: codec, preset: "ultrafast", rateControl: .crf(52)), size: PixelSize(width: 160, height: 120))
            try PatternFile.write(coarse, settings: VideoSettings(codec: codec, preset: "ultrafast", rateControl: .crf(63)), size: PixelSize(width: 160, height: 120))
            #expect(try MediaProbe.packetDigest(fine) != MediaProbe.packetDigest(coarse), "\(codec): CRF 52 and 63 differ")
        }
    }

    /// Every codec keeps to the keyframe interval asked for.
    @Test(arguments: VideoCodec.allCases)
    func keyframeIntervalIsKept(_ codec: VideoCodec) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("k.mkv")
        try PatternFile.write(url, settings: VideoSettings(codec: codec, preset: "ultrafast", keyframeInterval: 10), frames: 40)
        let r = try Subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts,flags",
                                    "-of", "csv=p=0", url.path])
        #expect(r.status == 0, "\(r.stderr)")
        let packets = r.output.split(separator: "\n").compactMap { line -> (Int, Bool)? in
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let pts = Int(fields[0]) else { return nil }
            return (pts, fields[1].hasPrefix("K"))
        }.sorted { $0.0 < $1.0 }
        #expect(packets.count == 40)
        let keyframes = packets.enumerated().filter { $0.element.1 }.map(\.offset)
        #expect(keyframes.first == 0)
        let gaps = zip(keyframes, keyframes.dropFirst() + [40]).map { $1 - $0 }
        #expect(gaps.allSatisfy { $0 <= 10 }, "\(codec) keyframes at frames \(keyframes)")
    }
}
