import Foundation
import Testing
import ReelCore
@testable import ReelFFmpeg
import ReelTestSupport

/// Pauses that come while a preset change's old encoder is still being flushed (a recorder
/// stepping its encoder's speed under load while its user pauses and resumes quickly): every
/// frame comes out once, decoding times rise, each resume begins with a keyframe.
@Suite struct PauseAfterPresetChangeTests {
    @Test(arguments: [0, 3, 20])
    func pausesRightAfterAPresetChangeLoseNoFrame(framesBetween: Int64) throws {
        var settings = VideoSettings(codec: .h264, frameRate: FrameRate(30))
        settings.preset = "veryfast"
        let encoder = try StreamEncoder(video: AssetWriter.VideoTrack(settings: settings, inputFormat: .yuv420p,
                                                                      inputSize: PixelSize(width: 320, height: 240)), audio: [])
        let sink = PresetChangeFlushTests.Collected()
        try encoder.addSink(sink)
        var next: Int64 = 0
        func feed(_ count: Int64) throws { try feedTestPattern(encoder, frames: next..<(next + count)); next += count }
        try feed(40)
        var resumes: [Int64] = []
        for preset in ["superfast", "ultrafast", "superfast", "veryfast"] {
            _ = try encoder.changeVideoPreset(to: preset)
            try feed(framesBetween)
            try encoder.pause()
            encoder.requestKeyframe(atGridIndex: next)
            resumes.append(next)
            try feed(10)
        }
        try encoder.finish()
        #expect(sink.frames.sorted() == Array(0..<next), "every frame once: \(sink.frames.sorted())")
        #expect(sink.decodingTimesRise)
        for first in resumes {
            let packet = sink.packets.first { Int64(($0.presentationTime.seconds * 30).rounded()) == first }
            #expect(packet?.isKeyframe == true, "frame \(first) begins a clip")
        }
    }
}
