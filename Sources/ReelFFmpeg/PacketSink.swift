/// Where encoded packets go: a file being written, a replay buffer, later a network stream.
///
/// One encode serves every sink: an ``AssetWriter`` hands the same ``EncodedPacket`` values
/// (their data shared by reference count, never copied per sink) to its file and to each sink
/// added to it. A sink first learns of every stream (``add(_:)``), then takes packets of those
/// streams in each stream's decoding order (``write(_:)``), then ``finish()``. Once it knows
/// every stream, ``begin()`` lets it open what it needs them for (a network connection).
///
/// Public so that applications can take the packets of a recording (to stream them, say)
/// without encoding twice; a sink is called from the writer's thread, one call at a time.
public protocol PacketSink: AnyObject {
    /// Announces a stream whose packets will follow; called for every stream before the first
    /// packet.
    func add(_ stream: EncodedStream) throws
    /// Every stream has been announced and packets follow: the place to connect or write a
    /// header. Optional; a sink that throws here is not added.
    func begin() throws
    /// Takes one packet of a stream announced before.
    func write(_ packet: EncodedPacket) throws
    /// No more packets come.
    func finish() throws
}

extension PacketSink {
    /// Does nothing: most sinks need no step between learning of the streams and the first packet.
    public func begin() throws {}
}
