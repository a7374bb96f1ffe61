/// Which of a compositor's video sources drives the composed stream's timing, and whether the
/// composed stream itself is out — decided from what each source delivers and reports, as a
/// value the compositor keeps behind its lock (and tests drive on made-up times).
///
/// A composed frame is made for each frame of the driver: the current driver while it is
/// live, else the first live source in ``order`` that keeps up with the output rate
/// (``keepsUpFraction``), else the live source with the highest rate. A driver that goes quiet
/// while another source delivers (``quietFrameTimes``) hands over to that source.
public struct CompositionDriver: Sendable, Hashable {
    /// A source delivering at least this fraction of the output frame rate keeps up with it:
    /// 29.97 fps sources drive a 30 fps composition, and one that fell a frame behind in its
    /// reported rate still counts.
    public static let keepsUpFraction = 0.95
    /// A driver whose newest frame is this many of its frame times (at most the output's)
    /// older than another source's new frame has gone quiet (a camera frozen but connected):
    /// that source takes over. Three, so that the jitter of a network camera (a frame late by
    /// one or two frame times) does not swap the driver back and forth.
    public static let quietFrameTimes = 3.0
    /// A source slower than this fraction of the output rate is not waited for before a
    /// composed frame is drawn (it would hold every frame back); it shows its newest frame.
    public static let waitedForFraction = 0.9

    /// Whether a source delivers.
    public enum Presence: Sendable, Hashable {
        /// Delivering.
        case live
        /// Stopped delivering for a while and trying to come back.
        case interrupted
        /// Lost or ended for good (it may still come back, as a source that reconnects).
        case gone
    }

    /// What the composed stream itself goes through.
    public enum Outage: Sendable, Hashable {
        /// At least one source is live.
        case none
        /// No source is live, and not every one has gone for good.
        case interrupted
        /// Every source has gone for good.
        case lost
    }

    private struct Input: Sendable, Hashable {
        var presence = Presence.live
        var rate: Double
        /// The presentation time of the newest frame since the source was last live.
        var newest: MediaTime?
    }

    /// The video sources in drawing order: in picture-in-picture the first is the large picture.
    public var order: [SourceID]
    /// The composed stream's frame rate.
    public var outputRate: FrameRate
    private var inputs: [SourceID: Input]
    /// The source whose frames drive composition, if any is live.
    public private(set) var driver: SourceID?
    /// What the composed stream goes through now.
    public private(set) var outage = Outage.none

    /// Starts with every source live, in `sources`' order, at its nominal frame rate.
    public init(sources: [(id: SourceID, framesPerSecond: Double)], outputRate: FrameRate) {
        order = sources.map(\.id)
        self.outputRate = outputRate
        inputs = Dictionary(sources.map { ($0.id, Input(rate: $0.framesPerSecond)) }, uniquingKeysWith: { a, _ in a })
        driver = nil
        driver = chooseDriver()
    }

    /// Whether `source` is one of the composed sources.
    public func contains(_ source: SourceID) -> Bool { inputs[source] != nil }

    /// Whether `source` is delivering.
    public func presence(of source: SourceID) -> Presence? { inputs[source]?.presence }

    /// A frame of `source` at `time` arrived. Returns whether it drives composition.
    public mutating func frameArrived(from source: SourceID, at time: MediaTime) -> Bool {
        guard var input = inputs[source] else { return false }
        let back = input.presence != .live
        input.presence = .live
        input.newest = time
        inputs[source] = input
        if back || driver == nil { driver = chooseDriver() }
        if let current = driver, current != source, let driving = inputs[current], let newest = driving.newest,
           (time - newest).seconds > Self.quietFrameTimes / min(driving.rate, outputRate.framesPerSecond) {
            driver = source
        }
        return driver == source
    }

    /// `source` changed presence (lost or ended: `.gone`; interrupted; resumed: `.live`).
    /// Returns the composed stream's new outage if it changed.
    public mutating func source(_ source: SourceID, became presence: Presence) -> Outage? {
        guard var input = inputs[source] else { return nil }
        input.presence = presence
        if presence != .live { input.newest = nil }
        inputs[source] = input
        driver = chooseDriver()
        let now: Outage = inputs.values.contains { $0.presence == .live } ? .none
            : inputs.values.allSatisfy { $0.presence == .gone } ? .lost : .interrupted
        guard now != outage else { return nil }
        outage = now
        return now
    }

    /// Whether every live source that keeps up with the output rate has a frame at or after
    /// `time` (or has gone quiet for ``quietFrameTimes`` output frames): a composed frame of
    /// that time can be drawn without waiting for more.
    public func hasFrames(upTo time: MediaTime) -> Bool {
        let slow = outputRate.framesPerSecond * Self.waitedForFraction
        let quiet = time - outputRate.frameDuration * Int64(Self.quietFrameTimes)
        return inputs.values.allSatisfy { input in
            guard input.presence == .live, input.rate >= slow else { return true }
            guard let newest = input.newest else { return false }
            return newest >= time || newest < quiet
        }
    }

    private func chooseDriver() -> SourceID? {
        if let current = driver, inputs[current]?.presence == .live { return current }
        let live = order.filter { inputs[$0]?.presence == .live }
        let target = outputRate.framesPerSecond * Self.keepsUpFraction
        if let fast = live.first(where: { (inputs[$0]?.rate ?? 0) >= target }) { return fast }
        return live.max { (inputs[$0]?.rate ?? 0) < (inputs[$1]?.rate ?? 0) }
    }
}
