import Foundation
import Reel
import Synchronization

// The Swift snippets of the documentation's articles (Sources/Reel/Reel.docc), each between
// DOCS-SNIPPET-BEGIN and DOCS-SNIPPET-END, so that they compile with every build;
// DocsTests checks that every ```swift block of the articles is one of them, word for word.

/// The snippets of the articles, as functions so that they compile (few of them run: they
/// write into the current directory and use the real screen and camera).
enum DocsExamples {
    /// Getting started: the test pattern.
    static func recordTheTestPattern() async throws {
        // DOCS-SNIPPET-BEGIN
        let session = CaptureSession()
        try session.addInput(TestPatternSource(size: PixelSize(width: 1280, height: 720), frameRate: FrameRate(30)))
        try session.addInput(ToneSource())
        let recorder = Recorder(url: URL(fileURLWithPath: "pattern.mp4"))
        recorder.maxRecordedDuration = MediaTime(seconds: 5)
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()   // returns once 5 s are recorded
        await session.stop()
        print("\(summary.frames) frames, \(summary.bytes) bytes in \(summary.url.path)")
        // DOCS-SNIPPET-END
    }

    /// Presenter overlays: clicks, keys and the followed view on an X11 screen.
    static func drawClicksAndKeys() async throws {
        // DOCS-SNIPPET-BEGIN
        let session = CaptureSession()
        let screen = X11ScreenSource(frameRate: FrameRate(30))
        try session.addInput(screen)
        let overlays = PresenterOverlays(showsMouseClicks: true, showsKeys: true, followsCursor: true, zoomFactor: 2)
        try session.connection(for: screen)?.setPresenterOverlays(overlays, events: XInputEventSource(for: screen))
        try session.addOutput(Recorder(url: URL(fileURLWithPath: "tutorial.mp4")))
        try await session.start()
        // DOCS-SNIPPET-END
    }

    /// Getting started: the screen.
    static func recordTheScreen() async throws {
        // DOCS-SNIPPET-BEGIN
        let screen = ScreenRecorder(configuration: .init(capturesAppAudio: true))
        guard screen.isAvailable else { print(screen.unavailability?.description ?? "no screen"); return }
        screen.isMicrophoneEnabled = true
        let recorder = try await screen.startRecording()   // ~/Videos/Reel 2026-11-29 at 14.05.09.mp4
        Task {
            for await event in recorder.events {
                if case .progress(let p) = event { print("\(p.duration) recorded, \(p.droppedFrames) dropped") }
            }
        }
        try await Task.sleep(for: .seconds(10))
        let summary = try await screen.stopRecording()
        print("\(summary.duration) of the screen in \(summary.url.path)")
        // DOCS-SNIPPET-END
    }

    /// Getting started: a camera.
    static func recordACamera() async throws {
        // DOCS-SNIPPET-BEGIN
        let location = try CameraLocation(parsing: "/dev/video0")   // or "rtsp://…", "clip.mp4", "test"
        if case .denied(let hint) = Cameras.authorizationStatus(for: location) { print(hint); return }
        let camera = try Cameras.source(for: location, size: PixelSize(width: 1280, height: 720))
        let session = CaptureSession()
        try session.addInput(camera)
        try session.addInput(PulseAudioSource.microphone())
        let recorder = Recorder(url: URL(fileURLWithPath: "camera.mp4"))
        try session.addOutput(recorder)
        try await session.start()
        try await Task.sleep(for: .seconds(10))
        await session.stop()
        // DOCS-SNIPPET-END
    }

    /// Porting: live frames from a sample handler (AVCaptureVideoDataOutput).
    static func liveFrames(from session: CaptureSession) throws {
        // DOCS-SNIPPET-BEGIN
        let frames = SampleHandlerOutput { sample, kind in
            guard case .video(let frame) = sample else { return }
            // Y′ plane of a 4:2:0 frame; valid only inside the closure.
            let topLeftLuma = frame.withUnsafePlane(0) { bytes, stride in bytes[0] }
            print(kind, frame.presentationTime, frame.size, topLeftLuma)
        }
        try session.addOutput(frames)   // while the session is stopped
        // DOCS-SNIPPET-END
    }

    /// Porting: an asset writer fed by hand (AVAssetWriter).
    static func writeByHand(frames: [VideoFrame], to url: URL) throws -> AssetWriter.Summary {
        // DOCS-SNIPPET-BEGIN
        let video = AssetWriter.VideoTrack(settings: VideoSettings(codec: .h264, rateControl: .bitRate(4_000_000)),
                                           inputFormat: .yuv420p, inputSize: PixelSize(width: 1280, height: 720))
        let writer = try AssetWriter(configuration: .init(url: url, video: video))
        for (i, frame) in frames.enumerated() {
            _ = try writer.appendVideo(frame, at: FrameRate(30).time(ofFrame: Int64(i)))
        }
        let summary = try writer.finish()   // finishWriting: the index is written, the file is complete
        // DOCS-SNIPPET-END
        return summary
    }

    /// Porting: an AVAssetWriter loop (inputs, a session, requestMediaDataWhenReady).
    static func writeLikeAVAssetWriter(frames: [VideoFrame], sound: [AudioBuffer], to url: URL) async throws -> AssetWriter {
        // DOCS-SNIPPET-BEGIN
        let writer = try AssetWriter(outputURL: url, fileType: .mp4)   // throws if the file exists
        let videoInput = AssetWriterInput(mediaType: .video,
                                          outputSettings: VideoSettings(codec: .h264, size: PixelSize(width: 640, height: 360)))
        let audioInput = AssetWriterInput(mediaType: .audio, outputSettings: AudioSettings(codec: .aac))
        let adaptor = AssetWriterInputPixelBufferAdaptor(assetWriterInput: videoInput)
        for input in [videoInput, audioInput] where writer.canAdd(input) { writer.add(input) }
        guard writer.startWriting() else { throw writer.error ?? ReelError(.encodingFailed, "the writer did not start") }
        writer.startSession(atSourceTime: frames.first?.presentationTime ?? .zero)

        let group = DispatchGroup()
        let pendingFrames = Mutex(frames[...]), pendingSound = Mutex(sound[...])
        group.enter()
        videoInput.requestMediaDataWhenReady(on: DispatchQueue(label: "video")) {
            while videoInput.isReadyForMoreMediaData {
                // Frames of any size and pixel format: scaled and converted on append.
                guard let frame = pendingFrames.withLock({ $0.popFirst() }),
                      adaptor.append(frame, withPresentationTime: frame.presentationTime) else {
                    videoInput.markAsFinished(); group.leave(); return
                }
            }
        }
        group.enter()
        audioInput.requestMediaDataWhenReady(on: DispatchQueue(label: "audio")) {
            while audioInput.isReadyForMoreMediaData {
                guard let buffer = pendingSound.withLock({ $0.popFirst() }), audioInput.append(buffer) else {
                    audioInput.markAsFinished(); group.leave(); return
                }
            }
        }
        await withCheckedContinuation { done in group.notify(queue: .global()) { done.resume() } }
        await writer.finishWriting()
        print(writer.status, writer.error.map { "\($0)" } ?? "complete")
        // DOCS-SNIPPET-END
        return writer
    }

    /// Porting: drawing frames into the adaptor's pixel buffer pool, ending the session.
    static func drawIntoThePool(to url: URL) async throws -> AssetWriter {
        // DOCS-SNIPPET-BEGIN
        let writer = try AssetWriter(outputURL: url, fileType: .mp4)
        let input = AssetWriterInput(mediaType: .video,
                                     outputSettings: VideoSettings(codec: .h264, size: PixelSize(width: 640, height: 360)))
        let adaptor = AssetWriterInputPixelBufferAdaptor(assetWriterInput: input,
                                                         sourcePixelBufferAttributes: .init(pixelFormat: .bgra))
        writer.add(input)
        writer.startWriting()
        writer.startSession(atSourceTime: .zero)
        guard let pool = adaptor.pixelBufferPool else { throw writer.error ?? ReelError(.notRunning, "not writing") }
        for i in 0..<90 {
            let time = FrameRate(30).time(ofFrame: Int64(i))
            // CVPixelBufferPoolCreatePixelBuffer, then drawing between lock and unlock:
            let frame = try pool.makeFrame(presentationTime: time) { _, bytes, _ in
                bytes.initializeMemory(as: UInt8.self, repeating: UInt8(i * 2))   // BGRA: every pixel drawn
            }
            adaptor.append(frame, withPresentationTime: time)   // its memory serves the next frame
        }
        input.markAsFinished()
        writer.endSession(atSourceTime: MediaTime(seconds: 2.5))   // frames from 2.5 s on are not shown
        await writer.finishWriting()
        // DOCS-SNIPPET-END
        return writer
    }

    /// Porting: a second of a tone made by the app, as AudioBuffers (CMSampleBufferCreate).
    static func appendATone(to audioInput: AssetWriterInput) throws {
        // DOCS-SNIPPET-BEGIN
        let format = AudioFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2)   // or .s16: Int16 samples
        var frame = 0
        while frame < 48_000 {
            let count = min(1024, 48_000 - frame)
            var samples: [Float] = []                                   // interleaved: left, right, left, right…
            for n in frame..<(frame + count) {
                let value = Float(0.3 * sin(2 * Double.pi * 440 * Double(n) / 48_000))
                samples += [value, value]
            }
            let buffer = try AudioBuffer(format: format,
                                         presentationTime: MediaTime(value: Int64(frame), timescale: 48_000),   // its first sample's time
                                         data: samples.withUnsafeBytes { Array($0) })
            audioInput.append(buffer)
            frame += count
        }
        // DOCS-SNIPPET-END
    }

    /// Porting NextLevel: a camera recorder's events, every case checked by the compiler.
    static func switchOverTheEvents(of camera: CameraRecorder) {
        // DOCS-SNIPPET-BEGIN
        Task {
            for await event in camera.events {
                switch event {
                case .clipStarted(let index): print("clip \(index) started")          // its index in camera.clips
                case .clipCompleted(let clip): print("clip of \(clip.duration.seconds) s")
                case .progress(let recorded, let progress): print("\(recorded.seconds) s, \(Int(progress * 100)) %")
                case .limitReached(let recorded): print("full at \(recorded.seconds) s")
                case .mergeFinished(let summary): print("merged into \(summary.url.path)")
                case .failed(let error): print(error)
                case .sourceInterrupted(let name, let error), .sourceLost(let name, let error),
                     .sourceIncomplete(let name, let error): print("\(name): \(error)")
                case .sourceResumed(let name): print("\(name) is back")
                case .clipsFolderChanged(let change): print(change)
                }
            }
        }
        // DOCS-SNIPPET-END
    }

    /// Porting: merging clips (AVMutableComposition + AVAssetExportSession).
    static func merge(_ a: URL, _ b: URL, to url: URL) throws {
        // DOCS-SNIPPET-BEGIN
        let merged = try Merger.merge([MergeInput(url: a), MergeInput(url: b, isMuted: true)], to: url,
                                      options: MergeOptions(allowsReencoding: true))
        print("\(merged.clipCount) clips, \(merged.duration), re-encoded: \(merged.reencodedClips)")
        // DOCS-SNIPPET-END
    }

    /// Recording that survives: recovering what a crash cut off.
    static func recoverEverything(in folder: URL) throws {
        // DOCS-SNIPPET-BEGIN
        for file in Recovery.cutOffRecordings(in: folder) {
            let recovered = try Recorder.recover(file)   // in place
            print("\(recovered.url.lastPathComponent): \(recovered.duration), \(recovered.videoFrames) frames")
        }
        for clips in RecordingSession.unmergedRecordings(in: folder) {   // NAME.clips folders
            let merged = try RecordingSession.recover(folder: clips)         // merges into NAME.mp4
            print("\(merged.url.lastPathComponent): \(merged.clipCount) clips merged")
        }
        // DOCS-SNIPPET-END
    }

    /// Timing: a recording faster than real time on a manual clock, with scheduled pauses.
    static func scriptedRecording(to url: URL) async throws -> RecordingSummary {
        // DOCS-SNIPPET-BEGIN
        let session = CaptureSession(clock: ManualClock())   // virtual time: runs as fast as it encodes
        try session.addInput(TestPatternSource())
        try session.addInput(ToneSource())
        let recorder = Recorder(url: url)
        recorder.pause(at: MediaTime(seconds: 2))    // snaps to the frame slot at or after 2 s
        recorder.record(at: MediaTime(seconds: 5))
        recorder.maxRecordedDuration = MediaTime(seconds: 4)   // recorded time: 2 s + 2 s
        try session.addOutput(recorder)
        try await session.start()
        let summary = try await recorder.result()
        await session.stop()
        // DOCS-SNIPPET-END
        return summary
    }
}
