import Foundation
import Synchronization
import ReelCore

/// A step a source's pictures go through on the source's own thread before any output sees
/// them: a camera's digital zoom, a filter. A session runs each video source's pictures
/// through its stages in order, so the recording, the live frames and a preview all see the
/// same picture.
package protocol FrameStage: AnyObject, Sendable {
    /// The picture after this step: `frame` itself when there is nothing to do, or a new
    /// picture; `nil` when no buffer is free for the result (the picture is then lost, and
    /// counted as dropped).
    func apply(to frame: VideoFrame) -> VideoFrame?
}

/// Runs `frame` through `stages` in order; `nil` when a stage had no buffer for it.
package func applyStages(_ stages: [any FrameStage], to frame: VideoFrame) -> VideoFrame? {
    var picture = frame
    for stage in stages {
        guard let next = stage.apply(to: picture) else { return nil }
        picture = next
    }
    return picture
}

/// The buffers a stage draws its pictures into: a pool of the pictures' format and size, made
/// again when they change. Off real time a stage waits for a free buffer rather than drop.
struct StageBuffers {
    let realTime: Bool
    private var pool: FramePool?

    init(realTime: Bool) { self.realTime = realTime }

    /// An empty picture shaped, timed and stamped like `frame`; `nil` when none is free.
    mutating func picture(like frame: VideoFrame) -> VideoFrame? {
        picture(like: frame, format: frame.format, size: frame.size)
    }

    /// An empty picture of `format` and `size`, timed and stamped like `frame`; `nil` when
    /// none is free.
    mutating func picture(like frame: VideoFrame, format: PixelFormat, size: PixelSize) -> VideoFrame? {
        if pool?.format != format || pool?.size != size {
            pool = FramePool(format: format, size: size, capacity: 8)
        }
        guard let pool, var out = realTime ? pool.makeFrame(presentationTime: frame.presentationTime, sequenceNumber: frame.sequenceNumber)
                                           : pool.makeFrameWaiting(presentationTime: frame.presentationTime, sequenceNumber: frame.sequenceNumber) else {
            return nil
        }
        out.captureTime = frame.captureTime
        return out
    }
}

/// The digital zoom of one camera: the picture's crop rectangle at its time, scaled back to
/// the full size.
package final class ZoomStage: FrameStage, @unchecked Sendable {
    private let zoom: ZoomControl
    private var buffers: StageBuffers
    private let scaler = FrameScaler()
    private let lock = NSLock()

    /// A zoom stage for `zoom`; off real time it waits for a free buffer rather than drop.
    package init(zoom: ZoomControl, realTime: Bool) {
        self.zoom = zoom
        buffers = StageBuffers(realTime: realTime)
    }

    package func apply(to frame: VideoFrame) -> VideoFrame? {
        guard let crop = zoom.cropRect(for: frame.size, at: frame.presentationTime) else { return frame }
        lock.lock(); defer { lock.unlock() }
        guard let out = buffers.picture(like: frame) else { return nil }
        do {
            try scaler.draw(frame, crop: crop, into: out, at: PixelRect(x: 0, y: 0, width: frame.width, height: frame.height))
        } catch {
            return frame  // a size the scaler cannot cut: show it whole rather than lose it
        }
        return out
    }
}

/// Which filters a picture source uses, in order, and from when: set at once (from the next
/// picture) or from a time on the session's clock, so that a change lands on an exact picture.
package final class VideoFilterControl: Sendable {
    private struct State {
        var current: [VideoFilter] = []
        /// Changes still to come, in time order.
        var pending: [(time: MediaTime, filters: [VideoFilter])] = []
        /// The size and format of the last picture a stage filtered with this control.
        var pictures: (size: PixelSize, format: PixelFormat)?
        /// Those its source said it would give when the session started, until a picture comes.
        var expected: (size: PixelSize, format: PixelFormat)?
    }
    private let state = Mutex(State())

    /// A control with no filter.
    package init() {}

    /// The filters now, in the order they apply (changes scheduled for later not counted).
    package var filters: [VideoFilter] { state.withLock { $0.current } }

    /// The first filter now (the only one, unless a chain was set).
    package var filter: VideoFilter? { filters.first }

    /// Uses `filters` in order (none: pictures as they are) from the next picture, or from the
    /// first picture at or after `time` on the session's clock. A change without a time
    /// cancels the ones still to come.
    package func setFilters(_ filters: [VideoFilter], at time: MediaTime? = nil) {
        state.withLock { s in
            guard let time else {
                s.current = filters
                s.pending = []
                return
            }
            s.pending.append((time, filters))
            s.pending.sort { $0.time < $1.time }
        }
    }

    /// Uses `filter` alone (`nil`: none); see ``setFilters(_:at:)``.
    package func setFilter(_ filter: VideoFilter?, at time: MediaTime? = nil) {
        setFilters(filter.map { [$0] } ?? [], at: time)
    }

    /// What a change refused by ``setCheckedFilters(_:at:of:)`` leaves.
    package static let unchanged = "nothing was changed: the pictures go on through the filters they had"

    /// ``setFilters(_:at:)``, once `filters` are found to apply to the pictures `source` gives
    /// now (the last a stage filtered), so that a change that cannot apply is refused rather
    /// than end the source's pictures (a filter never lets a picture through unfiltered, so a
    /// filter that fails ends them). Before the first picture they are checked on the pictures
    /// the source said it would give (``expectPictures(size:format:)``; a bad crop during a slow
    /// camera's start was taken, then ended its pictures); with neither, there is nothing to
    /// check them on: the session's start checks them.
    ///
    /// - Throws: ``ReelError/Code/invalidConfiguration`` naming the filter, the pictures and
    ///   `source`; the filters are then as they were.
    package func setCheckedFilters(_ filters: [VideoFilter], at time: MediaTime? = nil, of source: String) throws {
        if let pictures = state.withLock({ $0.pictures ?? $0.expected }) {
            _ = try filters.checkedOutputSize(for: pictures.size, format: pictures.format, of: source, so: Self.unchanged)
        }
        setFilters(filters, at: time)
    }

    /// Forgets the pictures of a stage that has ended: a new stage (the session started again,
    /// perhaps with pictures of another size) checks its filters at its start.
    package func forgetPictures() {
        state.withLock { $0.pictures = nil; $0.expected = nil }
    }

    /// Forgets the last picture of a stage that has ended, not what the source said it would
    /// give: a new stage of the same start checks on that until its first picture.
    package func forgetLastPicture() {
        state.withLock { $0.pictures = nil }
    }

    /// The pictures the source says it will give (its size and format as the session's start
    /// found them), on which a change is checked until its first picture comes.
    package func expectPictures(size: PixelSize, format: PixelFormat) {
        state.withLock { $0.expected = (size, format) }
    }

    /// The filters for `picture`, of time `time`; changes due by then take effect. The
    /// picture's size and format are kept for ``setCheckedFilters(_:at:of:)``.
    package func filters(at time: MediaTime, for picture: (size: PixelSize, format: PixelFormat)? = nil) -> [VideoFilter] {
        state.withLock { s in
            if let picture { s.pictures = picture }
            while let next = s.pending.first, next.time <= time {
                s.current = next.filters
                s.pending.removeFirst()
            }
            return s.current
        }
    }
}

/// The filter stage of one picture source: its control's filters applied to each picture in
/// order, each graph built again when its filter or the pictures' shape changes.
///
/// Each filter's pictures come out at the size it makes (`scale`, `crop`, `pad` change it).
/// With an `outputSize` (the size the stage's outputs were told, found with
/// ``Swift/Sequence/outputSize(for:format:)`` from the filters set when it started), every picture
/// leaves at that size: one of another size (a filter set later that makes another size, or
/// the picture with no filter after one that changed it) is fitted into it, its aspect kept,
/// and `resized` is called once for each filter whose pictures are so fitted.
///
/// A filter never lets a picture through unfiltered: a filter may be what keeps part of a
/// screen private (a crop, a blur). A graph that cannot be built for these pictures (a crop
/// larger than the picture, say: a window made smaller than the crop), or that gives no
/// picture for one when it holds none back, fails the stage: `failed` is called once, with
/// the filter and why, and from then on the stage gives no picture at all (``hasFailed``).
/// What the filter would have let through is not filtered, so none of it may be seen. The
/// first pictures a filter with memory holds back (`tblend`) leave black, and `heldBack` says
/// so once for the filter.
package final class FilterStage: FrameStage, @unchecked Sendable {
    private let control: VideoFilterControl
    /// Whose pictures these are, for the words of a failure.
    private let source: String
    private let failed: @Sendable (VideoFilter, ReelError) -> Void
    private let heldBack: @Sendable (VideoFilter, ReelError) -> Void
    private let resized: @Sendable (_ filter: VideoFilter, _ size: PixelSize, _ fittedInto: PixelSize) -> Void
    /// One step of the chain: its graph (once built) and the buffers it draws into.
    private struct Step {
        var graph: FilterGraph?
        var buffers: StageBuffers
    }
    private var steps: [Step] = []
    /// Why the stage failed, once it has: it gives no picture from then on.
    private var failure: ReelError?
    /// The filters said to hold pictures back (said once for each).
    private var saidHeldBack: Set<VideoFilter> = []
    /// The filters said to make pictures fitted into ``outputSize`` (said once for each).
    private var saidFitted: Set<VideoFilter> = []
    private let realTime: Bool
    private let zoomed: ViewResolver
    /// The size of the pictures the stage is given and the size every picture leaves at.
    private let sizes: (input: PixelSize, output: PixelSize)?
    private var fitBuffers: StageBuffers
    private let fitter = FrameScaler()
    private let lock = NSLock()

    /// A stage following `control` for the pictures of `source` (named in the words of a
    /// failure); off real time it waits for a free buffer rather than drop. With `sizes`,
    /// pictures of `input` size leave at `output` size whatever the filters of the moment make
    /// (see the type's documentation); without, at the size the filters make.
    package init(control: VideoFilterControl, realTime: Bool, sizes: (input: PixelSize, output: PixelSize)? = nil,
                 source: String = "the source",
                 failed: @escaping @Sendable (VideoFilter, ReelError) -> Void = { _, _ in },
                 heldBack: @escaping @Sendable (VideoFilter, ReelError) -> Void = { _, _ in },
                 resized: @escaping @Sendable (_ filter: VideoFilter, _ size: PixelSize, _ fittedInto: PixelSize) -> Void = { _, _, _ in }) {
        self.control = control
        self.realTime = realTime
        self.sizes = sizes
        self.source = source
        zoomed = ViewResolver(realTime: realTime)
        fitBuffers = StageBuffers(realTime: realTime)
        self.failed = failed
        self.heldBack = heldBack
        self.resized = resized
        control.forgetLastPicture()
    }

    /// What a filter's failure does to the source's pictures, as its words say.
    package static let stopped = "its pictures are no longer recorded, rather than recorded unfiltered"

    /// Whether a filter failed: the stage then gives no picture (`apply` returns `nil` for
    /// every one), and that is no picture dropped but the source's pictures ended.
    package var hasFailed: Bool {
        lock.lock(); defer { lock.unlock() }
        return failure != nil
    }

    package func apply(to frame: VideoFrame) -> VideoFrame? {
        lock.lock(); defer { lock.unlock() }
        guard failure == nil else { return nil }
        let filters = control.filters(at: frame.presentationTime, for: (frame.size, frame.format))
        if steps.count != filters.count {
            steps = filters.map { _ in Step(graph: nil, buffers: StageBuffers(realTime: realTime)) }
        }
        // No filter and no size to keep to: the picture as it is (a zoom left for the encoder too).
        guard !filters.isEmpty || (sizes.map { $0.input != $0.output } ?? false) else { return frame }
        // A zoom left for the encoder is made first: the filters see the zoomed picture.
        guard var picture = zoomed.resolve(frame) else { return nil }
        var sizeMaker: (filter: VideoFilter, size: PixelSize)?
        for (index, filter) in filters.enumerated() {
            guard let next = apply(filter, step: index, after: index > 0, to: picture) else { return nil }
            if next.size != picture.size { sizeMaker = (filter, next.size) }
            picture = next
        }
        guard let target = sizes?.output, picture.size != target else { return picture }
        if let sizeMaker, saidFitted.insert(sizeMaker.filter).inserted { resized(sizeMaker.filter, sizeMaker.size, target) }
        return fit(picture, into: target)
    }

    /// `picture` scaled into a picture of `size`, its aspect kept (black bars around it when
    /// the shapes differ); `nil` when no buffer is free.
    private func fit(_ picture: VideoFrame, into size: PixelSize) -> VideoFrame? {
        guard var out = fitBuffers.picture(like: picture, format: picture.format, size: size) else { return nil }
        let area = CompositionLayout.fit(picture.size, in: PixelRect(x: 0, y: 0, width: size.width, height: size.height))
        if area.width != size.width || area.height != size.height { out.fill(with: .black) }
        do {
            try fitter.draw(picture, into: out, at: area)
        } catch {
            out.fill(with: .black)  // a shape the scaler cannot draw: a black picture rather than none
        }
        out.identity = picture.identity?.resized(toHeight: size.height)
        return out
    }

    /// Ends the stage: `failed` is told why, and no picture leaves it from now on.
    private func fail(_ filter: VideoFilter, _ error: ReelError) -> VideoFrame? {
        failure = error
        steps = []
        failed(filter, error)
        return nil
    }

    /// `picture` through the `index`th step's graph for `filter` (`after`: filters before it
    /// made the picture); `nil` when no buffer is free or the filter failed.
    private func apply(_ filter: VideoFilter, step index: Int, after: Bool, to picture: VideoFrame) -> VideoFrame? {
        var step = steps[index]
        defer { if index < steps.count { steps[index] = step } }
        if step.graph?.graphText != filter.graph || step.graph?.format != picture.format || step.graph?.size != picture.size {
            step.graph = nil
            do {
                step.graph = try FilterGraph(graph: filter.graph, format: picture.format, size: picture.size, keepsSize: false)
            } catch {
                let reelError = error as? ReelError ?? ReelError(.invalidConfiguration, "\(error)")
                return fail(filter, filter.cannotApply(to: picture.size, of: source, after: after, because: reelError,
                                                      so: Self.stopped))
            }
        }
        guard let graph = step.graph, var out = step.buffers.picture(like: picture, format: picture.format, size: graph.outputSize) else { return nil }
        if graph.filter(picture, into: out) {
            // Made from this picture alone: an unchanged picture stays unchanged, and the
            // encoder may leave it out as it would unfiltered. Any other filter makes each
            // picture a new one. Which rows changed is not known through a change of size.
            if filter.worksPictureByPicture {
                out.identity = out.size == picture.size ? picture.identity : picture.identity?.resized(toHeight: out.height)
            }
            return out
        }
        // No picture for this one. A filter with memory holds its first back: black goes in
        // their place (a frame is not lost, and nothing unfiltered is seen). Any other filter
        // that gives none has failed.
        guard case .withMemory(let count) = filter.timing, count > 0 else {
            return fail(filter, filter.cannotApply(to: picture.size, of: source, after: after,
                                                   because: ReelError(.invalidConfiguration, "it gave no picture for one it was given"),
                                                   so: Self.stopped))
        }
        if saidHeldBack.insert(filter).inserted {
            heldBack(filter, ReelError(.invalidConfiguration,
                                       "it needs \(count) picture\(count == 1 ? "" : "s") before its first, so the first \(count == 1 ? "is" : "\(count) are") recorded black",
                                       hint: "filters that make each picture from that picture alone work best"))
        }
        out.fill(with: .black)
        out.identity = nil
        return out
    }
}

extension VideoFilter {
    /// Why this filter cannot be applied to the pictures of `size` of `source` (`after`: as
    /// the filters before it leave them), `error` being what libavfilter said (its reason, when
    /// it gave one), and what came of it (`consequence`: "nothing was recorded").
    package func cannotApply(to size: PixelSize, of source: String, after: Bool = false, because error: ReelError,
                             so consequence: String) -> ReelError {
        let reason = error.averror.map { FFmpeg.describe($0) } ?? error.message
        return ReelError(.invalidConfiguration,
                         "the filter '\(description)' cannot be applied to the \(size) pictures \(after ? "the filters before it make " : "")of \(source) (\(reason)): \(consequence)",
                         hint: error.averror == nil ? nil : "a filter must fit the pictures it is given: a crop within \(size), a pad around it",
                         averror: error.averror)
    }
}

extension PictureIdentity {
    /// This identity for the picture made of this one at another size: still the same picture
    /// when this one is, but with every row changed when any is (rows no longer line up).
    func resized(toHeight height: Int) -> PictureIdentity {
        PictureIdentity(id: id, base: base, changedRows: changedRows.isEmpty ? [] : [0..<height])
    }
}

extension Sequence<VideoFilter> {
    /// The size of the pictures a ``FilterStage`` makes of `format` pictures of `size` through
    /// these filters in order. A filter that cannot be set up for its pictures is passed over
    /// here (the size is asked of filters already checked, or only to be said);
    /// ``checkedOutputSize(for:format:of:so:)`` refuses it.
    package func outputSize(for size: PixelSize, format: PixelFormat) -> PixelSize {
        reduce(size) { size, filter in (try? filter.outputSize(for: size, format: format)) ?? size }
    }

    /// ``outputSize(for:format:)``, each filter set up for the pictures it is given, as a
    /// ``FilterStage`` will for `source`'s first picture.
    ///
    /// - Throws: ``ReelError/Code/invalidConfiguration`` naming the first filter that cannot be
    ///   applied, the source and the pictures' size, and `consequence` (what came of it).
    package func checkedOutputSize(for size: PixelSize, format: PixelFormat, of source: String, so consequence: String) throws -> PixelSize {
        var made = size
        var maker: VideoFilter?
        for (index, filter) in enumerated() {
            do {
                let given = made
                made = try filter.outputSize(for: made, format: format)
                if made != given { maker = filter }
            } catch {
                let reelError = error as? ReelError ?? ReelError(.invalidConfiguration, "\(error)")
                throw filter.cannotApply(to: made, of: source, after: index > 0, because: reelError, so: consequence)
            }
        }
        // The sizes `--size` takes bound what a filter makes too (s44 #8d: `scale=9000:9000`
        // recorded 9000x9000 pictures, which `--size 9000x9000` refuses).
        let (low, high) = (VideoSettings.minimumSize, VideoSettings.maximumSize)
        if let maker, !(low.width...high.width).contains(made.width) || !(low.height...high.height).contains(made.height) {
            throw ReelError(.invalidConfiguration, "the filter '\(maker.description)' makes \(made) pictures of \(source), out of the sizes reel records (\(low) to \(high)): \(consequence)",
                            hint: "give the filter a size within those (scale=W:H)")
        }
        return made
    }
}
