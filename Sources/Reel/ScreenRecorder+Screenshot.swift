import Foundation
import ReelFFmpeg

/// One picture of the screen, a region or a window, as ScreenCaptureKit's
/// `SCScreenshotManager` takes one: ``ScreenRecorder/screenshot()`` and
/// ``ScreenRecorder/screenshot(to:overwrite:)``.
extension ScreenRecorder {
    /// Takes one picture of what the ``configuration`` selects — the screen, its ``Configuration/region``
    /// or a ``Configuration/window`` — as ScreenCaptureKit's `SCScreenshotManager.captureImage`:
    /// the screen is opened, its first whole picture taken (RGBA, full size, the pointer
    /// drawn in if ``Configuration/capturesCursor``), and it is closed again. No sound is
    /// captured. While capture or recording runs it is refused (`.alreadyRunning`): a
    /// ``LiveFrames`` output gives pictures of a running capture.
    ///
    /// - Throws: why the screen cannot be captured, or `.sourceUnavailable` when no picture
    ///   came within 10 seconds.
    public func screenshot() async throws -> LiveFrame {
        guard !isActive else {
            throw ReelError(.alreadyRunning, "the screen is being captured or recorded", hint: "take pictures of a running capture with a LiveFrames output")
        }
        return try await Snapshot.take(of: screenSource(), clock: clock)
    }

    /// Takes a picture as ``screenshot()`` does and writes it at `url` as a PNG (`.png`,
    /// lossless) or a JPEG (`.jpg`, `.jpeg`); returns `url`. A file there is replaced only if
    /// `overwrite`; the picture takes the name only once it is complete.
    ///
    /// - Throws: `.unsupportedFormat` for another extension, `.fileExists`, and what
    ///   ``screenshot()`` throws.
    @discardableResult
    public func screenshot(to url: URL, overwrite: Bool = false) async throws -> URL {
        guard let format = PictureFileFormat(pathExtension: url.pathExtension) else {
            throw ReelError(.unsupportedFormat, "a picture is written as .png or .jpg, not '.\(url.pathExtension)'", hint: "name the file .png or .jpg")
        }
        if !overwrite && FileManager.default.fileExists(atPath: url.path) {
            throw ReelError(.fileExists, "\(url.path) already exists", hint: LibraryHint.allowOverwriting)
        }
        return try PictureFile.write(try await screenshot(), toFirstFreeOf: [url], format: format, overwrite: overwrite)
    }
}

/// One picture of a source: a session of the source alone with a ``LiveFrames`` output, ended
/// at the first picture.
package enum Snapshot {
    /// The first picture `source` gives (RGBA, its own size), within `timeout`.
    package static func take(of source: any CaptureSource, clock: any MediaClock,
                             timeout: Duration = .seconds(10)) async throws -> LiveFrame {
        let session = CaptureSession(clock: clock)
        try session.addInput(source)
        let frames = LiveFrames()
        try session.addOutput(frames)
        let stream = frames.frames(LiveFrames.Settings(format: .rgba))
        try await session.start()
        let first = await withTaskGroup(of: LiveFrame?.self) { group in
            group.addTask { for await frame in stream { return frame }; return nil }
            group.addTask { try? await Task.sleep(for: timeout); return nil }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        await session.stop()
        guard let first else {
            throw ReelError(.sourceUnavailable, "\(source.name) gave no picture within \(timeout)", hint: "check that it delivers pictures")
        }
        return first
    }
}
