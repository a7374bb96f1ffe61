import Foundation
import Testing
import Reel
import ReelFFmpeg
import ReelTestSupport

/// Video files played as cameras: pacing on real and manual clocks, looping, the end, and
/// files that are damaged, empty or not media.
@Suite(.serialized, .tags(.realTime)) struct FileCameraTests {
    static let size = PixelSize(width: 320, height: 240)

    /// A test-pattern video: `frames` frames numbered from 0 at `fps`, encoded by the ffmpeg
    /// command line (H.264 in MP4 unless told otherwise).
    static func patternFile(in dir: URL, frames: Int = 30, fps: Int = 30, name: String = "pattern.mp4",
                            codec: [String] = ["-c:v", "libx264", "-preset", "ultrafast", "-g", "10"],
                            extra: [String] = []) throws -> URL {
        let raw = dir.appendingPathComponent("\(name).yuv")
        let pool = FramePool(format: .yuv420p, size: size, capacity: 1)
        var bytes = Data()
        for index in 0..<frames {
            let frame = try #require(pool.makeFrame())
            try TestPattern.draw(index: Int64(index), flash: false, background: YUVColor(y: 90, cb: 100, cr: 160), into: frame)
            for plane in 0..<3 {
                let width = plane == 0 ? size.width : size.width / 2
                let rows = plane == 0 ? size.height : size.height / 2
                frame.withUnsafePlane(plane) { buffer, stride in
                    for row in 0..<rows {
                        bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(row * stride)..<(row * stride + width)]))
                    }
                }
            }
        }
        try bytes.write(to: raw)
        defer { try? FileManager.default.removeItem(at: raw) }
        let url = dir.appendingPathComponent(name)
        let result = try Subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "yuv420p",
                                         "-s", "\(size.width)x\(size.height)", "-r", String(fps), "-i", raw.path]
                                        + codec + extra + [url.path])
        try #require(result.status == 0, "ffmpeg: \(result.stderr)")
        return url
    }

    @Test func preparesWithTheFilesSizeAndRate() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.patternFile(in: dir.url, fps: 25)
        let format = try FileCameraSource(url: url).prepare()
        #expect(format == .video(size: Self.size, pixelFormat: .yuv420p, frameRate: FrameRate(25)))
        let scaled = try FileCameraSource(url: url, size: PixelSize(width: 160, height: 120)).prepare()
        #expect(scaled == .video(size: PixelSize(width: 160, height: 120), pixelFormat: .yuv420p, frameRate: FrameRate(25)))
    }

    @Test func playsInRealTimeAtTheFilesRate() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.patternFile(in: dir.url, frames: 30, fps: 30)
        let camera = FileCameraSource(url: url)
        _ = try camera.prepare()
        let probe = CameraProbe()
        let started = HostClock().now()
        try camera.start(probe.context)
        usleep(2_000_000)
        camera.stop()
        let elapsed = (HostClock().now() - started).seconds
        let seen = probe.seen
        let expected = elapsed * 30
        #expect(abs(Double(seen.count) - expected) <= 3, "\(seen.count) frames in \(elapsed) s")
        #expect(seen.map(\.counter) == (0..<seen.count).map { Int64($0 % 30) }, "the counter restarts with each loop")
        for (a, b) in zip(seen, seen.dropFirst()) {
            #expect(abs((b.presentationTime - a.presentationTime).seconds - 1.0 / 30) < 0.001)
        }
        // Delivered on time: each frame's time is when it was due on the session clock.
        let first = try #require(seen.first)
        #expect(first.presentationTime.seconds < 0.1)
        #expect(probe.reported.isEmpty, "\(probe.reported.map(\.event))")
    }

    @Test func loopsUnderAManualClockFasterThanRealTime() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.patternFile(in: dir.url, frames: 30, fps: 30)
        let camera = FileCameraSource(url: url)
        _ = try camera.prepare()
        let probe = CameraProbe(clock: ManualClock())
        let started = Date()
        try camera.start(probe.context)
        #expect(probe.wait(upTo: 10) { probe.frameCount >= 100 })
        camera.stop()
        #expect(Date().timeIntervalSince(started) < 5, "100 frames of a manual clock come faster than real time")
        let seen = Array(probe.seen.prefix(100))
        #expect(seen.map(\.counter) == (0..<100).map { Int64($0 % 30) })
        #expect(seen.map(\.presentationTime) == (0..<100).map { FrameRate(30).time(ofFrame: Int64($0)) })
        #expect(seen.map(\.sequenceNumber) == (0..<100).map { Int64($0) })
        #expect(seen.allSatisfy { $0.size == Self.size })
    }

    @Test func endsWhenNotLooping() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.patternFile(in: dir.url, frames: 20, fps: 30)
        let camera = FileCameraSource(url: url, loops: false)
        _ = try camera.prepare()
        let probe = CameraProbe(clock: ManualClock())
        try camera.start(probe.context)
        #expect(probe.wait(upTo: 10) { probe.hasEnded })
        camera.stop()
        #expect(probe.seen.map(\.counter) == (0..<20).map { Int64($0) })
        #expect(probe.reported.count == 1, "\(probe.reported.map(\.event))")
    }

    @Test func endsInRealTimeAfterTheFilesDuration() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.patternFile(in: dir.url, frames: 15, fps: 30)
        let camera = FileCameraSource(url: url, loops: false)
        _ = try camera.prepare()
        let probe = CameraProbe()
        let started = Date()
        try camera.start(probe.context)
        #expect(probe.wait(upTo: 3) { probe.hasEnded })
        let took = Date().timeIntervalSince(started)
        camera.stop()
        // Paced at the file's rate (decoding alone takes a few ms); a busy machine only adds.
        #expect(took > 0.4, "15 frames at 30 fps took \(took) s")
        #expect(probe.frameCount == 15)
    }

    @Test func playsOtherCodecsAndContainers() throws {
        let dir = try TemporaryDirectory()
        let mjpeg = try Self.patternFile(in: dir.url, frames: 10, name: "pattern.avi", codec: ["-c:v", "mjpeg", "-q:v", "3"])
        let vp9 = try Self.patternFile(in: dir.url, frames: 10, name: "pattern.mkv", codec: ["-c:v", "mpeg4", "-q:v", "3"])
        for url in [mjpeg, vp9] {
            let camera = FileCameraSource(url: url, loops: false)
            _ = try camera.prepare()
            let probe = CameraProbe(clock: ManualClock())
            try camera.start(probe.context)
            #expect(probe.wait(upTo: 10) { probe.hasEnded }, "\(url.lastPathComponent)")
            camera.stop()
            #expect(probe.seen.map(\.counter) == (0..<10).map { Int64($0) }, "\(url.lastPathComponent)")
        }
    }

    @Test func recordsThroughASession() async throws {
        let dir = try TemporaryDirectory()
        let source = try Self.patternFile(in: dir.url, frames: 30, fps: 30)
        let output = dir.url.appendingPathComponent("recorded.mp4")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(FileCameraSource(url: source))
        var settings = Recorder.Settings(container: .mp4)
        settings.video.frameRate = FrameRate(30)
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(value: 2, timescale: 1)
        let recorder = Recorder(url: output, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        #expect(summary.frames == 60)
        let counters = try MediaProbe.decodeLuma(output, width: Self.size.width, height: Self.size.height).map(\.counter)
        #expect(counters == (0..<60).map { Int64($0 % 30) })
    }

    // MARK: - Hostile files

    enum Hostile: String, CaseIterable, Sendable {
        case missing, empty, directory, text, random, truncatedHeader, noVideo, device, zeroes, craftedHeader
    }

    /// Makes a file that is not a playable video.
    static func make(_ kind: Hostile, in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("hostile-\(kind.rawValue).mp4")
        switch kind {
        case .missing:
            return dir.appendingPathComponent("nothing-here.mp4")
        case .empty:
            try Data().write(to: url)
        case .directory:
            let folder = dir.appendingPathComponent("folder.mp4", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return folder
        case .text:
            try Data("This is a shopping list, not a video.\nMilk\nEggs\n".utf8).write(to: url)
        case .random:
            var generator = SystemRandomNumberGenerator()
            try Data((0..<200_000).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: url)
        case .truncatedHeader:
            // The index (moov) is at the end of a plain MP4; the first half has none.
            let whole = try patternFile(in: dir, frames: 30, name: "whole.mp4")
            let data = try Data(contentsOf: whole)
            try data.prefix(data.count / 2).write(to: url)
        case .noVideo:
            let result = try Subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
                                             "-c:a", "aac", url.path])
            try #require(result.status == 0, "ffmpeg: \(result.stderr)")
        case .device:
            return URL(fileURLWithPath: "/dev/zero")
        case .zeroes:
            try Data(count: 1 << 20).write(to: url)
        case .craftedHeader:
            // An MP4 'ftyp' box followed by a 'moov' box that claims 4 GB.
            var bytes: [UInt8] = [0, 0, 0, 20] + Array("ftypisom".utf8) + [0, 0, 2, 0] + Array("isom".utf8)
            bytes += [0xFF, 0xFF, 0xFF, 0xF0] + Array("moov".utf8) + [0, 0, 0, 0x6c] + Array("mvhd".utf8)
            bytes += [UInt8](repeating: 0x41, count: 4_000)
            try Data(bytes).write(to: url)
        }
        return url
    }

    @Test(arguments: Hostile.allCases)
    func hostileFilesFailClearlyAtPrepare(_ kind: Hostile) throws {
        let dir = try TemporaryDirectory()
        let url = try Self.make(kind, in: dir.url)
        let camera = FileCameraSource(url: url)
        let outcome = try #require(bounded(15) { Result { try camera.prepare() } }, "prepare hung on a \(kind) file")
        guard case .failure(let failure) = outcome.0 else {
            Issue.record("a \(kind) file prepared: \(outcome.0)")
            return
        }
        let error = try #require(failure as? ReelError)
        let expected: ReelError.Code = kind == .missing ? .sourceUnavailable : .invalidMedia
        #expect(error.code == expected, "\(kind): \(error)")
        #expect(error.hint != nil, "\(kind): \(error)")
        #expect(error.message.contains(url.lastPathComponent), "\(kind): \(error)")
        print("\(kind): \(error) [\(String(format: "%.3f", outcome.1)) s]")
    }

    /// Files that open but break while playing: the camera plays what it can and reports
    /// `.lost` or `.ended`, never crashes or hangs.
    @Test(arguments: ["truncatedTail", "corruptMiddle"])
    func damagedFilesPlayWhatTheyCanAndStop(_ kind: String) throws {
        let dir = try TemporaryDirectory()
        // The index at the front, so the file opens; then the data is cut or scrambled.
        let whole = try Self.patternFile(in: dir.url, frames: 60, name: "front.mp4", extra: ["-movflags", "faststart"])
        var data = try Data(contentsOf: whole)
        let url = dir.url.appendingPathComponent("\(kind).mp4")
        if kind == "truncatedTail" {
            data = data.prefix(data.count * 2 / 3)
        } else {
            var generator = SystemRandomNumberGenerator()
            let start = data.count / 3
            for i in start..<(start + data.count / 3) { data[i] = UInt8.random(in: 0...255, using: &generator) }
        }
        try data.write(to: url)
        let camera = FileCameraSource(url: url, loops: false)
        let probe = CameraProbe(clock: ManualClock())
        let ran = bounded(20) {
            do {
                _ = try camera.prepare()
                try camera.start(probe.context)
            } catch {
                return "prepare: \(error)"
            }
            probe.wait(upTo: 15) { probe.hasEnded || !probe.losses.isEmpty }
            camera.stop()
            return "played"
        }
        let outcome = try #require(ran, "a \(kind) file hung the camera")
        print("\(kind): \(outcome.0), \(probe.frameCount) frames, \(probe.reported.map(\.event))")
        if outcome.0 == "played" {
            #expect(probe.hasEnded || !probe.losses.isEmpty)
            #expect(probe.frameCount > 0 && probe.frameCount <= 60)
        } else {
            #expect(outcome.0.contains("invalidMedia") || outcome.0.contains("is not a video"), "\(outcome.0)")
        }
    }

    @Test func stopIsPromptWhilePlaying() throws {
        let dir = try TemporaryDirectory()
        // Two frames a second apart: the camera sleeps between them.
        let url = try Self.patternFile(in: dir.url, frames: 2, fps: 1, extra: ["-r", "1"])
        let camera = FileCameraSource(url: url)
        _ = try camera.prepare()
        let probe = CameraProbe()
        try camera.start(probe.context)
        #expect(probe.wait(upTo: 2) { probe.frameCount >= 1 })
        let timing = try #require(bounded(5) { camera.stop() })
        // The next frame is a second away: a stop that waited for it would take that long.
        #expect(timing.1 < 0.9, "stop took \(timing.1) s")
    }
}
