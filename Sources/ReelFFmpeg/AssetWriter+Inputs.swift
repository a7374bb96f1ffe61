import Foundation
import ReelCore

/// `AVAssetWriter`'s shape: a writer made for a file, inputs added per track, writing started,
/// a session started at a source time, media appended from the inputs, the writer finished;
/// ``AssetWriter/status`` and ``AssetWriter/error`` say how it went.
///
/// A misuse that `AVAssetWriter` answers with an exception (an input added after the start, an
/// append before it or after the input was marked finished, a second session) fails the writer
/// here instead, with an ``AssetWriter/error`` that says what happened: nothing traps, and what
/// was appended before is finished into the file.
extension AssetWriter {
    /// A writer for the file at `outputURL`, as `AVAssetWriter(outputURL:fileType:)`: nothing
    /// is opened until ``startWriting()``; add an ``AssetWriterInput`` per track first. A `nil`
    /// `fileType` is taken from the file name's extension (MP4 if it says nothing).
    ///
    /// - Throws: `.fileExists` when a file is at `outputURL` and `overwrite` is off (as
    ///   `AVAssetWriter` refuses to write over a file); it is left as it is.
    public convenience init(outputURL: URL, fileType: Container? = nil, overwrite: Bool = false) throws {
        if !overwrite, FileManager.default.fileExists(atPath: outputURL.path) {
            throw ReelError(.fileExists, "\(outputURL.path) already exists", hint: LibraryHint.allowOverwriting)
        }
        self.init(pending: Configuration(url: outputURL, container: fileType, video: nil, overwrite: overwrite),
                  needsSession: true, wrappingOutput: { $0 })
    }

    /// The file being written (``url``), as `AVAssetWriter.outputURL`.
    public var outputURL: URL { url }

    /// The container of the file, as `AVAssetWriter.outputFileType`.
    public var outputFileType: Container { configuration.container }

    /// How often a fragment is completed while recording an MP4/MOV, as
    /// `AVAssetWriter.movieFragmentInterval` (half a second by default; `nil` writes the file
    /// unfragmented, and a crash then leaves nothing that plays). Set before ``startWriting()``;
    /// later changes are ignored.
    public var movieFragmentInterval: MediaTime? {
        get { lock.withLock { configuration.fragmentInterval } }
        set { lock.withLock { if lifecycle.status == .unknown { configuration.fragmentInterval = newValue } } }
    }

    /// Where the writer is in its life.
    public var status: Status { lock.withLock { lifecycle.status } }

    /// Why the writer failed, when ``status`` is ``Status/failed``.
    public var error: (any Error)? { lock.withLock { failure } }

    /// The inputs added, in order.
    public var inputs: [AssetWriterInput] { lock.withLock { addedInputs } }

    /// What the finished file holds, once ``finishWriting()`` has completed it.
    public var summary: Summary? { lock.withLock { finishedSummary } }

    /// Whether ``add(_:)`` would take `input`: only before ``startWriting()``, an input not
    /// added to a writer yet, with settings of its own that work (a video input's settings
    /// need a size), at most one video input, and audio the container can hold.
    public func canAdd(_ input: AssetWriterInput) -> Bool {
        lock.withLock { whyNotAdd(input) == nil }
    }

    /// Adds a track's input, as `AVAssetWriter.add(_:)`. An input that ``canAdd(_:)`` refuses
    /// fails the writer, with the reason in ``error``, where `AVAssetWriter` raises an
    /// exception.
    public func add(_ input: AssetWriterInput) {
        lock.withLock {
            if let reason = whyNotAdd(input) {
                fail(reason)
                return
            }
            input.attach(to: self)
            addedInputs.append(input)
        }
    }

    /// Why `input` cannot be added, or `nil` if it can.
    private func whyNotAdd(_ input: AssetWriterInput) -> ReelError? {
        if let error = lifecycle.addingInput().error { return error }
        if input.writer != nil || addedInputs.contains(where: { $0 === input }) {
            return ReelError(.invalidConfiguration, "the input has been added to a writer already")
        }
        if let problem = input.problem { return problem }
        if input.mediaType == .video, addedInputs.contains(where: { $0.mediaType == .video }) {
            return ReelError(.invalidConfiguration, "a file takes one video input", hint: "write a second picture into a file of its own")
        }
        if let codec = input.audioTrack?.settings.codec, !configuration.container.canHold(codec) {
            return ReelError(.unsupportedFormat, "\(configuration.container.rawValue) files cannot hold \(codec.rawValue) audio",
                             hint: "use \(configuration.container.defaultAudioCodec.displayName) audio for .\(configuration.container.fileExtension) files")
        }
        if let codec = input.videoTrack?.settings.codec, !configuration.container.canHold(codec) {
            return ReelError(.unsupportedFormat, "\(configuration.container.rawValue) files cannot hold \(codec.rawValue) video",
                             hint: LibraryHint.useMKVOrH264)
        }
        return nil
    }

    /// Opens the file and the encoders for the inputs added, as `AVAssetWriter.startWriting()`:
    /// `true` if the writer is now ``Status/writing``. Otherwise the writer has failed and
    /// ``error`` says why: no input, settings this build cannot encode, a file at the URL
    /// (never written over unless the writer was made with `overwrite`), a second call.
    /// Inputs waiting in ``AssetWriterInput/requestMediaDataWhenReady(on:using:)`` are asked
    /// for media from now on.
    @discardableResult
    public func startWriting() -> Bool {
        let started: Bool = lock.withLock {
            switch lifecycle.startingToWrite() {
            case .proceed: break
            case .fail(let error):
                fail(error)
                return false
            case .ignore:
                return false
            }
            guard !addedInputs.isEmpty else {
                fail(ReelError(.invalidConfiguration, "nothing to write: no input was added", hint: "add an input before startWriting()"))
                return false
            }
            configuration.video = addedInputs.lazy.compactMap(\.videoTrack).first
            let audioInputs = addedInputs.filter { $0.mediaType == .audio }
            configuration.audio = audioInputs.compactMap(\.audioTrack)
            for (track, input) in audioInputs.enumerated() { input.track = track }
            do {
                try open()
                return true
            } catch {
                fail(error)
                return false
            }
        }
        if started {
            for input in inputs { input.askForMedia() }
        }
        return started
    }

    /// Finishes the file, as `AVAssetWriter.finishWriting()`: every input is marked finished,
    /// the encoders are drained and an MP4/MOV is finalised with its index at the front.
    /// Returns when the file is complete; ``status`` is then ``Status/completed`` (and
    /// ``summary`` says what the file holds) or ``Status/failed`` with the ``error``. Called
    /// again, or after a failure or a cancel, it does nothing (`AVAssetWriter` raises an
    /// exception): the file stays as it is, ``status`` says how it ended. Called before
    /// ``startWriting()``, it fails the writer.
    public func finishWriting() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            // Draining and finalising block: off the concurrency pool.
            DispatchQueue.global().async {
                self.finishWritingNow()
                done.resume()
            }
        }
    }

    /// As ``finishWriting()``, calling `handler` on a queue of its own once the file is complete
    /// (or the writer has failed), as `AVAssetWriter.finishWriting(completionHandler:)`.
    public func finishWriting(completionHandler handler: @escaping @Sendable () -> Void) {
        DispatchQueue.global().async {
            self.finishWritingNow()
            handler()
        }
    }

    /// ``finishWriting()``'s work, on the calling thread.
    private func finishWritingNow() {
        lock.withLock {
            switch lifecycle.status {
            case .writing, .unknown:
                _ = try? finish()   // the status and error say how it went (a misuse fails the writer)
            case .completed, .failed, .cancelled:
                break
            }
        }
    }

    /// Fails the writer with `error`: the inputs take nothing more, and what was appended is
    /// finished into the file where it can be (else the file keeps what reached the disk).
    func fail(_ error: any Error) {
        lock.withLock {
            let wasActive = lifecycle.fail()
            guard wasActive || lifecycle.status == .failed && failure == nil else { return }
            failure = error
            for input in addedInputs { input.finishedByWriter() }
            guard wasActive, let opened else { return }
            do {
                finishedSummary = try opened.file.finishRecording(drainingInto: opened.encoder)
            } catch {
                opened.encoder.abandon()
            }
        }
    }

    /// Appends `frame`, converted to the video track's format and size, at source time `time`,
    /// for `input`; `false` if the writer is not writing (it has failed, for a misuse).
    func append(_ frame: VideoFrame, at time: MediaTime, from input: AssetWriterInput, fitter: FrameFitter) -> Bool {
        lock.withLock {
            guard admits(input) else { return false }
            do {
                try appendVideo(fitter.fit(frame), at: time)
                input.noteAppended(until: time + (frameRate?.frameDuration ?? .zero))
                wakeInputs(besides: input)
                return true
            } catch {
                fail(error)
                return false
            }
        }
    }

    /// Appends `buffer` to `input`'s audio track; `false` if the writer is not writing (it has
    /// failed, for a misuse or an error).
    func append(_ buffer: AudioBuffer, from input: AssetWriterInput) -> Bool {
        lock.withLock {
            guard admits(input), let track = input.track else { return false }
            do {
                try appendAudio(input.fitted(buffer), track: track)
                input.noteAppended(until: buffer.endTime)
                wakeInputs(besides: input)
                return true
            } catch {
                fail(error)
                return false
            }
        }
    }

    /// How far an input's media may run ahead of another's before it waits (see
    /// ``AssetWriterInput/expectsMediaDataInRealTime``).
    static let interleavingWindow = MediaTime(seconds: 1)

    /// Whether `input` is ready for more: the writer writes and, unless the input's media comes
    /// in `realTime`, it is not more than ``interleavingWindow`` ahead of the slowest other
    /// input still taking media (one with nothing appended yet counts from the session's start).
    func isReady(_ input: AssetWriterInput, realTime: Bool) -> Bool {
        lock.withLock {
            guard lifecycle.isWriting else { return false }
            guard !realTime, lifecycle.hasSession, let mine = input.appendedUntil else { return true }
            let others = addedInputs.filter { $0 !== input && !$0.isMarkedFinished && !$0.expectsMediaDataInRealTime }
            guard let slowest = others.map({ $0.appendedUntil ?? lifecycle.start }).min() else { return true }
            return mine <= slowest + Self.interleavingWindow
        }
    }

    /// Asks the inputs other than `input` for media again: one that waited for it may be ready.
    func wakeInputs(besides input: AssetWriterInput) {
        for other in inputs where other !== input { other.askForMedia() }
    }

    /// Whether `input` may append now; a misuse fails the writer.
    private func admits(_ input: AssetWriterInput) -> Bool {
        switch lifecycle.appending(input.mediaType, inputFinished: input.isMarkedFinished) {
        case .proceed: return true
        case .ignore: return false
        case .fail(let error):
            fail(error)
            return false
        }
    }
}
