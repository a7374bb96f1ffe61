// DOCS-SNIPPET-BEGIN
import Foundation
import Reel
import ReelPreview
import Synchronization

/// The AVAssetWriter camera app on Linux: a session of a camera and a microphone, a preview
/// window with a record button, and a data output whose samples go to an asset writer while
/// recording: each press starts a new file or finishes the one being written.
final class PortedWriterCamera: Sendable {
    /// What the capture callback and the button share (the app's properties, and its queue).
    private struct Take {
        var writer: AssetWriter?
        var videoInput: AssetWriterInput?
        var audioInput: AssetWriterInput?
        var adaptor: AssetWriterInputPixelBufferAdaptor?
        var lastTime = MediaTime.zero
    }
    private let take = Mutex(Take())
    let session = CaptureSession()                                   // AVCaptureSession()
    let preview: PreviewWindow?                                      // AVCaptureVideoPreviewLayer
    let size: PixelSize

    init(camera: any CaptureSource, microphone: any CaptureSource, size: PixelSize, window: Bool) throws {
        self.size = size
        try session.addInput(camera)                                 // addInput(AVCaptureDeviceInput(device: camera))
        try session.addInput(microphone)                             // addInput(AVCaptureDeviceInput(device: mic))
        preview = window ? PreviewWindow(settings: .init(title: "Camera", showsRecordButton: true)) : nil
        let output = SampleHandlerOutput { [weak self] sample, _ in  // setSampleBufferDelegate(self, queue:)
            self?.captureOutput(didOutput: sample)
        }
        try session.addOutput(output)                                // addOutput(videoOutput), addOutput(audioOutput)
        if let preview { try session.addOutput(preview) }
    }

    func start() async throws { try await session.start() }         // session.startRunning()

    var isRecording: Bool { take.withLock { $0.writer != nil } }

    /// The record button: a new file while not recording, else the file finished. Returns the
    /// finished writer (its status, error and summary), if this press stopped one.
    @discardableResult
    func recordButtonTapped(url: URL) async -> AssetWriter? {
        if isRecording { return await stop() }
        do {
            try startRecording(url: url)
        } catch {
            preview?.message = "\(error)"
        }
        return nil
    }

    private func startRecording(url: URL) throws {
        let writer = try AssetWriter(outputURL: url, fileType: .mp4)         // AVAssetWriter(outputURL:fileType:)
        let video = AssetWriterInput(mediaType: .video,
                                     outputSettings: VideoSettings(codec: .h264, size: size))   // AVVideoCodecKey, width, height
        video.expectsMediaDataInRealTime = true
        let audio = AssetWriterInput(mediaType: .audio,
                                     outputSettings: AudioSettings(codec: .aac, sampleRate: 48_000, channels: 2))
        audio.expectsMediaDataInRealTime = true
        let adaptor = AssetWriterInputPixelBufferAdaptor(assetWriterInput: video, sourcePixelBufferAttributes: nil)
        if writer.canAdd(video) { writer.add(video) }
        if writer.canAdd(audio) { writer.add(audio) }
        take.withLock { $0 = Take(writer: writer, videoInput: video, audioInput: audio, adaptor: adaptor) }
    }

    /// captureOutput(_:didOutput:from:) of both data outputs, on the output's own thread.
    private func captureOutput(didOutput sample: Sample) {
        take.withLock { take in
            guard let writer = take.writer, let videoInput = take.videoInput, let audioInput = take.audioInput else { return }
            let time = sample.presentationTime                        // CMSampleBufferGetPresentationTimeStamp
            if writer.status == .unknown {
                writer.startWriting()
                writer.startSession(atSourceTime: time)
            }
            switch sample {
            case .video(let frame) where videoInput.isReadyForMoreMediaData:   // CMSampleBufferGetImageBuffer
                if take.adaptor?.append(frame, withPresentationTime: time) == true { take.lastTime = time }
            case .audio(let buffer) where audioInput.isReadyForMoreMediaData:
                audioInput.append(buffer)                             // audioInput.append(sampleBuffer)
            default:
                break
            }
        }
    }

    /// markAsFinished, endSession(atSourceTime:) and finishWriting: the file is complete.
    private func stop() async -> AssetWriter? {
        let ended: AssetWriter? = take.withLock { take in
            defer { take = Take() }
            take.videoInput?.markAsFinished()
            take.audioInput?.markAsFinished()
            take.writer?.endSession(atSourceTime: take.lastTime)
            return take.writer
        }
        await ended?.finishWriting()
        if let error = ended?.error { preview?.message = "\(error)" }
        return ended
    }

    func stopRunning() async { await session.stop() }               // session.stopRunning()
}
// DOCS-SNIPPET-END
