import Foundation
import Testing
import ReelCore
import ReelFFmpeg
import ReelTestSupport

/// The pixel buffer adaptor's pool, as `CVPixelBufferPool`: frames drawn into reused memory,
/// appended, and found in the file.
@Suite struct PixelBufferPoolTests {
    typealias Ported = AssetWriterInputTests

    /// The luma level of frame `i` of these tests.
    static func level(_ i: Int) -> UInt8 { UInt8(30 + 8 * i) }

    /// Draws a flat picture of luma `level` into a frame of the pool (YUV 4:2:0 or BGRA grey).
    static func draw(_ pool: PixelBufferPool, level: UInt8, at time: MediaTime) throws -> VideoFrame {
        try pool.makeFrame(presentationTime: time) { plane, bytes, _ in
            switch pool.format {
            case .bgra:
                let grey = UInt8((Double(Int(level) - 16) * 255 / 219).rounded())
                for i in stride(from: 0, to: bytes.count, by: 4) {
                    bytes[i] = grey; bytes[i + 1] = grey; bytes[i + 2] = grey; bytes[i + 3] = 255
                }
            default:
                bytes.initializeMemory(as: UInt8.self, repeating: plane == 0 ? level : 128)
            }
        }
    }

    /// Writes 20 frames drawn from the adaptor's pool (of `attributes`), each let go after its
    /// append: the pool is `nil` before the writer writes, one buffer serves every frame, and
    /// each frame's picture is in the file.
    func writesFramesFromThePool(_ attributes: AssetWriterInputPixelBufferAdaptor.SourcePixelBufferAttributes?) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("pool.mp4")
        let writer = try AssetWriter(outputURL: url)
        let input = AssetWriterInput(mediaType: .video, outputSettings: Ported.videoSettings())
        let adaptor = AssetWriterInputPixelBufferAdaptor(assetWriterInput: input, sourcePixelBufferAttributes: attributes)
        writer.add(input)
        #expect(adaptor.pixelBufferPool == nil, "nil before startWriting(), as Apple's")
        #expect(writer.startWriting())
        writer.startSession(atSourceTime: .zero)
        let pool = try #require(adaptor.pixelBufferPool)
        #expect(pool.format == attributes?.pixelFormat ?? .yuv420p)
        #expect(pool.size == attributes?.size ?? Ported.size)
        var memory = Set<UnsafeMutableRawPointer>()
        for i in 0..<20 {
            let time = FrameRate(30).time(ofFrame: Int64(i))
            let frame = try Self.draw(pool, level: Self.level(i), at: time)
            memory.insert(frame.buffer.bytes)
            #expect(adaptor.append(frame, withPresentationTime: time))
        }
        #expect(memory.count == 1, "the memory of an appended frame is the next one's: \(memory.count) buffers")
        #expect(pool.framesInUse == 0)
        await writer.finishWriting()
        #expect(writer.status == .completed, "\(String(describing: writer.error))")
        let frames = try MediaProbe.decodeLuma(url, width: 160, height: 120)
        #expect(frames.count == 20)
        for (i, frame) in frames.enumerated() {
            // Decoded to full-range grey: video level 16 is 0, 235 is 255.
            let wanted = Double(Int(Self.level(i)) - 16) * 255 / 219
            let mean = frame.meanLuma(in: PixelRect(x: 8, y: 8, width: 144, height: 104))
            #expect(abs(mean - wanted) < 3, "frame \(i): grey \(mean), drawn \(wanted)")
        }
    }

    @Test func framesOfTheInputsOwnFormatAreReusedAndWritten() async throws {
        try await writesFramesFromThePool(nil)
    }

    @Test func framesOfAnotherFormatAndSizeAreReusedConvertedAndWritten() async throws {
        try await writesFramesFromThePool(.init(pixelFormat: .bgra, size: PixelSize(width: 320, height: 240)))
    }

    /// The pool is bounded: with all its frames held, one more is refused with an error that
    /// says what to do; once one is let go, its memory serves again.
    @Test func thePoolIsBounded() throws {
        let pool = try PixelBufferPool(format: .yuv420p, size: PixelSize(width: 64, height: 48), capacity: 3)
        var held = try (0..<3).map { _ in try Self.draw(pool, level: 50, at: .zero) }
        #expect(pool.framesInUse == 3)
        #expect { try Self.draw(pool, level: 50, at: .zero) } throws: { error in
            let error = error as? ReelError
            return error?.code == .limitReached && error?.hint?.contains("let go") == true
        }
        let freed = held.removeLast().buffer.bytes
        #expect(pool.framesInUse == 2)
        let again = try Self.draw(pool, level: 60, at: .zero)
        #expect(again.buffer.bytes == freed)
        again.withUnsafePlane(0) { bytes, _ in #expect(bytes[0] == 60, "drawn anew") }
        #expect { try PixelBufferPool(format: .yuv420p, size: PixelSize(width: 63, height: 48)) } throws: { _ in true }
        #expect { try PixelBufferPool(format: .bgra, size: PixelSize(width: 64, height: 48), capacity: 0) } throws: { _ in true }
    }

    /// An audio input's adaptor has no pool.
    @Test func anAudioInputHasNoPool() throws {
        let dir = try TemporaryDirectory()
        let writer = try AssetWriter(outputURL: dir.url.appendingPathComponent("sound.m4a"), fileType: .mp4)
        let input = AssetWriterInput(mediaType: .audio, outputSettings: AudioSettings(codec: .aac))
        let adaptor = AssetWriterInputPixelBufferAdaptor(assetWriterInput: input)
        writer.add(input)
        #expect(writer.startWriting())
        #expect(adaptor.pixelBufferPool == nil)
        writer.cancelWriting()
    }
}
