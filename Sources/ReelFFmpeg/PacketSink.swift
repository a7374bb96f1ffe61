/// Where encoded packets go: a recording's file, a clip's file, a replay buffer, a live
/// stream, or an application's own sink.
///
/// One encode serves every sink: a ``StreamEncoder`` hands the same ``EncodedPacket`` values
/// (their data shared by reference count, never copied per sink) to each sink added to it. A
/// sink first learns of every stream (``add(_:)``), then takes packets of those streams in
/// each stream's decoding order (``write(_:)``), then ``finish()``. Once it knows every stream,
/// ``begin()`` lets it open what it needs them for (a network connection).
///
/// A write answers with a ``SinkFlow``, the way a GStreamer pad answers a push: the packet was
/// taken, the sink is full (a file at its size limit), or the sink has gone. What a sink that
/// is full, gone or failing does to the recording is the ``SinkPolicy`` it was added with, not
/// an accident of the sink's order.
///
/// Public so that applications can take the packets of a recording (to stream them, say)
/// without encoding twice; a sink is called from the encoder's thread, one call at a time.
public protocol PacketSink: AnyObject {
    /// Announces a stream whose packets will follow; called for every stream before the first
    /// packet.
    func add(_ stream: EncodedStream) throws
    /// Every stream has been announced and packets follow: the place to connect or write a
    /// header. Optional; a sink that throws here is not added.
    func begin() throws
    /// Takes one packet of a stream announced before, and says how the flow stands.
    ///
    /// - Returns: ``SinkFlow/ok`` when the packet was taken; ``SinkFlow/full`` when it was not,
    ///   nor will any more be (a size limit); ``SinkFlow/gone`` when the sink takes nothing
    ///   more and has no error to say why.
    /// - Throws: why the sink failed (a full disk, say): to the encoder that is the sink gone.
    func write(_ packet: EncodedPacket) throws -> SinkFlow
    /// The recording paused: put what was taken where it belongs now (a file completes its
    /// fragment and hands it to the disk), since nothing may follow for a while. Optional.
    func flush() throws
    /// No more packets come.
    func finish() throws
    /// No more packets come, and the recording was abandoned (an abort, a failure): keep what
    /// was taken, do nothing more (a file is left as it is on the disk, not finalised).
    /// Optional: by default ``finish()``, its error ignored.
    func abandon()
    /// What the sink's end does to a recording that feeds it, when the recording is not told
    /// otherwise (a ``StreamEncoder`` or ``AssetWriter`` is told in `addSink(_:policy:)`; a
    /// `Recorder` takes this). By default ``SinkPolicy/required``: the recording depends on
    /// the sink. A sink the recording can go on without (a preview, an upload, a log) says
    /// ``SinkPolicy/optional``; live streams and replay buffers do.
    var policy: SinkPolicy { get }
}

extension PacketSink {
    /// Does nothing: most sinks need no step between learning of the streams and the first packet.
    public func begin() throws {}

    /// Does nothing: most sinks hold nothing back.
    public func flush() throws {}

    /// Finishes the sink, ignoring its error: most sinks keep what they took either way.
    public func abandon() { try? finish() }

    /// ``SinkPolicy/required``: what a sink is unless it says otherwise.
    public var policy: SinkPolicy { .required }
}

/// How a sink took a packet (see ``PacketSink/write(_:)``).
public enum SinkFlow: Sendable, Hashable {
    /// Taken; more may come.
    case ok
    /// Not taken, and the sink takes no more: it is full (a file at its size limit). Its
    /// packets so far stay, and it is finished with the others.
    case full
    /// Not taken, and the sink takes no more: it has gone (closed by its owner).
    case gone
}

/// What a sink's end does to the recording that feeds it (see ``StreamEncoder/addSink(_:policy:)``).
public enum SinkPolicy: Sendable, Hashable {
    /// The recording depends on the sink: its failure ends the recording with its error, and
    /// its being full ends the recording as having reached its size (a recording's file; an
    /// application's sink unless its ``PacketSink/policy`` says otherwise).
    case required
    /// The recording goes on without the sink: a failure, a `full` or a `gone` is reported and
    /// the sink is finished and dropped (a live stream, a replay buffer, an application's sink
    /// whose ``PacketSink/policy`` says so).
    case optional
}
