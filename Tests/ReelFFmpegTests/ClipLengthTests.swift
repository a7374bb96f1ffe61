internal import CFFmpeg
import Testing
import ReelCore
@testable import ReelFFmpeg

/// Where a clip ends when clips are joined: the next clip's first frame goes there, so it must
/// lie after every frame of the clip (issue 29: a merge after an undo refused the clip after
/// the one undone, about once in eight runs under load).
@Suite struct ClipLengthTests {
    /// The clip of that refusal, as the joiner read it: its frames 512 ticks of 1/15360 apart
    /// (two lost), the last 5 ticks long (the pause came just after it). Put on a grid of its
    /// average frame rate, its length fell 37 ticks before its last frame began.
    @Test func aClipNeverEndsBeforeItsLastFrameBegins() {
        let tb = AVRational(num: 1, den: 15360)
        var length = ClipLength()
        for frame in Int64(0)...29 where frame != 10 && frame != 11 {
            length.note(stream: 0, start: MediaTime(ticks: frame * 512, tb), duration: MediaTime(ticks: frame == 29 ? 5 : 512, tb))
        }
        let lastStart = MediaTime(ticks: 29 * 512, tb)
        // A grid that snaps the end (14,853 ticks) down to 27 frames of it, 14,811 ticks.
        let averageGrid = MediaTime(value: 77, timescale: 2160)
        #expect(length.length(video: 0, grid: averageGrid) > lastStart)
        #expect(length.length(video: 0, grid: averageGrid) == MediaTime(ticks: 29 * 512 + 5, tb))
        #expect(length.length(video: 0) == MediaTime(ticks: 29 * 512 + 5, tb))
    }

    /// A grid still puts Matroska's millisecond ends on the frames they round (30 fps: 33 or 34
    /// ms a frame), and only there.
    @Test func millisecondEndsArePutOnTheFrameGrid() {
        let ms = AVRational(num: 1, den: 1000)
        var length = ClipLength()
        for frame in Int64(0)..<30 { length.note(stream: 0, start: MediaTime(ticks: frame * 1000 / 30, ms), duration: MediaTime(ticks: 33, ms)) }
        #expect(length.length(video: 0, grid: MediaTime(value: 1, timescale: 30)) == MediaTime(seconds: 1))
    }

    /// Only a coarse time base asks for a grid: an MP4's fine one, with an average frame rate
    /// read from the file (28 frames in 14,853 ticks), has none.
    @Test func onlyACoarseTimeBaseHasAFrameGrid() {
        func facts(_ timeBase: AVRational, _ rate: AVRational) -> StreamFacts {
            // A stream as a file read back gives it: its time base and its frame rate.
            let context = avformat_alloc_context()
            defer { avformat_free_context(context) }
            let stream = avformat_new_stream(context, nil)!
            stream.pointee.codecpar.pointee.codec_type = AVMEDIA_TYPE_VIDEO
            stream.pointee.codecpar.pointee.codec_id = AV_CODEC_ID_H264
            stream.pointee.time_base = timeBase
            stream.pointee.avg_frame_rate = rate
            return StreamFacts(stream, kind: .video)
        }
        #expect(facts(AVRational(num: 1, den: 15360), AVRational(num: 430080, den: 14853)).inexactFrameDuration == nil)
        #expect(facts(AVRational(num: 1, den: 15360), AVRational(num: 30, den: 1)).inexactFrameDuration == nil)
        #expect(facts(AVRational(num: 1, den: 1000), AVRational(num: 30, den: 1)).inexactFrameDuration == MediaTime(value: 1, timescale: 30))
        #expect(facts(AVRational(num: 1, den: 1000), AVRational(num: 25, den: 1)).inexactFrameDuration == nil)
    }
}
