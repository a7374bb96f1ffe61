import Foundation
import ReelFFmpeg

/// What a source is given when the session starts: the stages its pictures go through before
/// any output sees them (zoom, overlays, orientation, filters) and where its samples and
/// events go.
extension CaptureSession {
    /// The size of a source's pictures before its filters, and the size they leave at.
    typealias PictureSizes = (input: PixelSize, output: PixelSize)

    /// `format` as the outputs see it through `filters` (at the size they make), and the sizes
    /// the filter stage keeps to.
    ///
    /// - Throws: ``ReelError/Code/invalidConfiguration`` when a filter cannot be applied to
    ///   `source`'s pictures (a crop larger than they are): the session does not start, for a
    ///   filter never lets a picture through unfiltered (it may be what keeps part of a
    ///   screen private), and nothing is recorded.
    static func filtered(_ format: SourceFormat, through filters: [VideoFilter], of source: String) throws -> (SourceFormat, PictureSizes?) {
        guard case let .video(size, pixelFormat, rate) = format else { return (format, nil) }
        let made = try filters.checkedOutputSize(for: size, format: pixelFormat, of: source, so: Self.nothingRecorded)
        return (.video(size: made, pixelFormat: pixelFormat, frameRate: rate), (size, made))
    }

    /// What a start that fails for a filter did, as its words say.
    static let nothingRecorded = "nothing was recorded"

    /// Checks that `filters` can be applied to `source`'s sound of `format`, as its stage will
    /// when the sound comes.
    ///
    /// - Throws: ``ReelError/Code/invalidConfiguration`` naming the filters, the source and the
    ///   sound's format: the session does not start, and nothing is recorded.
    static func checkSound(_ format: SourceFormat, through filters: [AudioFilter], of source: String) throws {
        guard case .audio(let audio) = format, !filters.isEmpty else { return }
        do {
            _ = try AudioFilterGraph(filters: filters, format: audio)
        } catch {
            throw soundFilterFailed(filters, of: source, format: audio, error, so: Self.nothingRecorded)
        }
    }

    /// Why `filters` cannot filter `source`'s sound (`error`), and what came of it.
    static func soundFilterFailed(_ filters: [AudioFilter], of source: String, format: AudioFormat?, _ error: any Error,
                                  so consequence: String) -> ReelError {
        let reelError = error as? ReelError ?? ReelError(.invalidConfiguration, "\(error)")
        let chain = filters.map(\.description).joined(separator: ",")
        return ReelError(.invalidConfiguration,
                         "the audio filter '\(chain)' cannot be applied to the \(format.map { "\($0) " } ?? "")sound of \(source) (\(reelError.message)): \(consequence)",
                         hint: reelError.hint, averror: reelError.averror)
    }

    /// The size `filters` make of pictures of `size` as asked: on full-colour pictures, so
    /// that a crop or pad that libavfilter rounds to the colour planes' half size on a camera's
    /// pictures (`crop=641:361` making 640x360 there) shows the size it was asked for (issue
    /// 26, F5: only a screen's odd crop was said).
    static func sizeAsked(by filters: [VideoFilter], of size: PixelSize) -> PixelSize {
        filters.outputSize(for: size, format: .bgra)
    }

    /// How pictures a filter set before the start makes are recorded, for each size a recorder
    /// that takes them records at (`recorders`, `nil` for one that keeps the pictures' size;
    /// none: as any recorder would that keeps it), when that is not the size the filter makes:
    /// `asked` (as asked: see ``sizeAsked(by:of:)``) and `made` (what libavfilter made of it).
    /// Issue 26, F3: this was said without the recorder's size, naming a size the file did
    /// not have, and nothing was said of a picture stretched to it.
    static func recordings(ofFilterMade asked: PixelSize, made: PixelSize,
                           recorders: [PixelSize?]) -> [(recorded: PixelSize, resizing: SessionEvent.FilterResizing)] {
        let even = PixelSize(width: max(2, made.width & ~1), height: max(2, made.height & ~1))
        return sizesRecorded(by: recorders, ofPicturesAt: even).compactMap { recorded in
            if recorded == even { return asked == even ? nil : (recorded, .evenPart) }
            return (recorded, AssetWriter.VideoTrack.placement(of: even, in: recorded) == nil ? .scaled : .fitted)
        }
    }

    /// The sizes of their own that the recorders among `outputs` record at (`nil`: the pictures').
    static func recorderSizes(among outputs: [any CaptureOutput]) -> [PixelSize?] {
        outputs.compactMap { $0 as? Recorder }.map(\.settings.video.size)
    }

    /// The sizes `recorders` (as ``recorderSizes(among:)`` gives them; none: one that keeps the
    /// pictures' size) record pictures of the even `size` at, as their encoders do: a size of
    /// their own made even, or `size`. Each once, in order.
    static func sizesRecorded(by recorders: [PixelSize?], ofPicturesAt size: PixelSize) -> [PixelSize] {
        var sizes: [PixelSize] = []
        for own in recorders.isEmpty ? [nil] : recorders {
            let recorded = own.map { PixelSize(width: $0.width & ~1, height: $0.height & ~1) } ?? size
            if !sizes.contains(recorded) { sizes.append(recorded) }
        }
        return sizes
    }

    func context(for entry: Entry, outputs: [any CaptureOutput], origin: MediaTime, presenter: PresenterStage?,
                         sizes: PictureSizes?) -> SourceContext {
        let id = entry.id
        let kind = entry.source.kind
        let name = entry.source.name
        let continuation = self.continuation
        let report: @Sendable (SourceEvent) -> Void = { event in
            for output in outputs { output.sourceEvent(event, from: id) }
            switch event {
            case .droppedFrames(let n, _): continuation.yield(.droppedFrames(source: name, count: n))
            case .lost(let error): continuation.yield(.sourceLost(source: name, error: error))
            case .interrupted(let error): continuation.yield(.sourceInterrupted(source: name, error: error))
            case .resumed: continuation.yield(.sourceResumed(source: name))
            case .ended: continuation.yield(.sourceEnded(source: name))
            case .silent(let error): continuation.yield(.sourceSilent(source: name, error: error))
            case .incomplete(let error): continuation.yield(.sourceIncomplete(source: name, error: error))
            case .droppedAudio(_, let duration):
                continuation.yield(.sourceIncomplete(source: name, error: SourceEvent.droppedAudioError(duration: duration)))
            case .missedAudio(_, let duration): continuation.yield(.missedAudio(source: name, duration: duration))
            case .endedAnotherRecording(let message): continuation.yield(.anotherRecordingEnded(source: name, message: message))
            }
        }
        // The source's pictures go through its stages, in order, before any output sees them.
        var stages: [any FrameStage] = []
        var filterStage: FilterStage?
        if let camera = entry.source as? any CameraSource { stages.append(ZoomStage(zoom: camera.zoom, realTime: clock.isRealTime)) }
        // The overlays first: the events' positions are in the source's own pixels.
        if let presenter { stages.append(presenter) }
        if kind == .video {
            // What the file holds is the recorders' to say: at a size of their own, the size
            // each records at is named, not the picture the filters leave.
            let recorders = Self.recorderSizes(among: outputs)
            stages.append(OrientationStage(control: entry.connection.orientation, realTime: clock.isRealTime))
            // A filter that fails (the pictures changed size so that it no longer fits them, or
            // one set while running never did) ends the source's pictures, as a source lost: the
            // outputs finish with what was filtered, and a recording is incomplete.
            let filter = FilterStage(control: entry.filter, realTime: clock.isRealTime, sizes: sizes, source: name, failed: { _, error in
                report(.lost(error))
            }, heldBack: { filter, error in
                continuation.yield(.filterFailed(source: name, filter: filter.description, error: error))
            }, resized: { filter, size, fitted in
                for recorded in Self.sizesRecorded(by: recorders, ofPicturesAt: fitted) {
                    continuation.yield(.filterResized(source: name, filter: filter.description, size: size, recorded: recorded,
                                                      resizing: .fittedToStartingSize))
                }
            })
            stages.append(filter)
            filterStage = filter
            // A filter set before the start that makes another size: said when the file does
            // not hold that size (its even part; a recorder's own size, scaled or fitted in).
            // On pictures whose colour is kept at half size (a camera's, the test pattern's)
            // libavfilter itself rounds a crop or pad to even: the size asked is said.
            if let sizes, case let asked = Self.sizeAsked(by: entry.filter.filters, of: sizes.input), asked != sizes.input {
                let filter = entry.filter.filters.map(\.description).joined(separator: ",")
                for (recorded, resizing) in Self.recordings(ofFilterMade: asked, made: sizes.output, recorders: recorders) {
                    continuation.yield(.filterResized(source: name, filter: filter, size: asked, recorded: recorded, resizing: resizing))
                }
            }
        }
        let pictureStages = stages
        let failingStage = filterStage
        let sound = entry.connection.sound.withLock { $0 }
        // Sound its filters fail on ends the source's sound, as pictures do: the filter may be
        // what keeps a room's voices out of a recording.
        let audioStage = kind.isAudio ? AudioStage(offset: sound.offset, filters: sound.filters, failure: { error in
            report(.lost(Self.soundFilterFailed(sound.filters, of: name, format: nil, error,
                                                so: "its sound is no longer recorded, rather than recorded unfiltered")))
        }, deliver: { piece in
            let sourced = SourcedSample(source: id, kind: kind, sample: .audio(piece))
            for output in outputs { output.consume(sourced) }
        }) : nil
        entry.connection.soundStage.withLock { $0 = audioStage }
        let zoomed = presenter == nil ? nil : ViewResolver(realTime: clock.isRealTime)
        return SourceContext(id: id, clock: clock, origin: origin, deliver: { sample in
            if let audioStage, case .audio(let buffer) = sample { return audioStage.apply(buffer) }
            var sample = sample
            if !pictureStages.isEmpty, case .video(let frame) = sample {
                guard let staged = applyStages(pictureStages, to: frame) else {
                    // No buffer was free: a picture dropped. A filter that failed ended the
                    // source's pictures instead (said once, as the source lost): none is counted.
                    if failingStage?.hasFailed != true { report(.droppedFrames(1, reason: .encoderBehind)) }
                    return
                }
                sample = .video(staged)
            }
            let sourced = SourcedSample(source: id, kind: kind, sample: sample)
            guard let zoomed, case .video(let frame) = sample, frame.view != nil else {
                for output in outputs { output.consume(sourced) }
                return
            }
            // A zoom left for the encoder: the recorder takes the picture as it is, every other
            // output the zoomed picture, made once for them all (none when no buffer was free).
            var made: SourcedSample??
            for output in outputs {
                if output is any DeferredViewTaker { output.consume(sourced); continue }
                if made == nil { made = .some(zoomed.resolve(frame).map { SourcedSample(source: id, kind: kind, sample: .video($0)) }) }
                if let picture = made ?? nil { output.consume(picture) }
            }
        }, report: report)
    }
}
