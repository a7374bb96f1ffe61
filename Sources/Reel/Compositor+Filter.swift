import Foundation
import ReelFFmpeg

/// The composed picture's filters: set, checked while composing, and why they failed.
extension Compositor {
    /// Filters the composed picture with `filter` (`nil`: no filter) before the compositor's
    /// outputs see it. Can be called while composing: the change lands on the next composed
    /// picture, or, with `time` (on the session's clock), on the first one at or after it, and
    /// costs no picture. (A source's own pictures are filtered with
    /// ``CaptureSession/setVideoFilter(_:for:at:)``.)
    ///
    /// A filter set before the session starts that changes the size (`scale`, `crop`, `pad`)
    /// sets the size the compositor's outputs record; one set later that makes another size
    /// has its pictures fitted into that size, and ``events`` says so.
    ///
    /// A filter never lets a composed picture through unfiltered: one that cannot be applied
    /// to the composed picture (a crop larger than it) makes the session's start throw, and
    /// one set while composing that cannot ends the composed pictures, as a lost source: the
    /// outputs are told (``SourceEvent/lost(_:)``), keep what was filtered, and a recording is
    /// incomplete; ``events`` says it and ``videoFilterFailure`` keeps why. So that a filter set
    /// while composing that cannot apply (a typo'd crop) does not end them, it is checked on
    /// the composed picture first and refused if it cannot.
    ///
    /// - Throws: ``ReelError/Code/invalidConfiguration`` when the filter cannot be applied to
    ///   the composed picture; the filter is then the one before.
    public func setVideoFilter(_ filter: VideoFilter?, at time: MediaTime? = nil) throws {
        try setVideoFilters(filter.map { [$0] } ?? [], at: time)
    }

    /// The filters the composed picture goes through, in order (a chain; see
    /// ``setVideoFilter(_:at:)``): a look on top of a crop that keeps part of the screen
    /// private, say.
    ///
    /// - Throws: ``ReelError/Code/invalidConfiguration`` when a filter cannot be applied to
    ///   the composed picture (or to what the filters before it make of it); nothing changes.
    public func setVideoFilters(_ chain: [VideoFilter], at time: MediaTime? = nil) throws {
        try filterControl.setCheckedFilters(chain, at: time, of: Self.pictureName(layout))
    }

    /// The filter the composed picture goes through now (the first of a chain).
    public var videoFilter: VideoFilter? { filterControl.filter }

    /// The filters the composed picture goes through now, in order.
    public var videoFilters: [VideoFilter] { filterControl.filters }

    /// Why the filter could not be applied to the composed picture, if it could not while
    /// composing (the composed pictures then ended, none unfiltered).
    public var videoFilterFailure: ReelError? { filterFailure.withLock { $0 } }
}
