import Foundation
import ReelCore
import ReelSystem
internal import CPipeWire

/// The PipeWire graph through libpipewire: the ``PipeWireGraph`` that application audio links
/// in.
package struct SystemPipeWireGraph: PipeWireGraph {
    /// The real daemon.
    package init() {}

    package func connect(remote: String?) throws(ReelError) -> any PipeWireGraphConnection {
        var message = [CChar](repeating: 0, count: 256)
        guard let graph = reel_pw_graph_open(remote, &message, message.count) else {
            throw ReelError(.sourceUnavailable, PipeWireText.string(message),
                            hint: "check that PipeWire runs: systemctl --user status pipewire")
        }
        return GraphConnection(graph)
    }
}

/// C strings from the shim.
enum PipeWireText {
    /// The text of a NUL-terminated C string in `buffer`.
    static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The text of a fixed-size C string field.
    static func field<T>(_ value: T) -> String {
        withUnsafeBytes(of: value) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}

/// One libpipewire connection to the graph.
private final class GraphConnection: PipeWireGraphConnection {
    private let graph: OpaquePointer
    private var buffer = [reel_pw_graph_event](repeating: reel_pw_graph_event(), count: 64)

    init(_ graph: OpaquePointer) { self.graph = graph }

    deinit { reel_pw_graph_close(graph) }

    func nextEvents(timeoutMicroseconds: Int32) throws(ReelError) -> [PipeWireGraphEvent] {
        var message = [CChar](repeating: 0, count: 256)
        let count = reel_pw_graph_next_events(graph, &buffer, Int32(buffer.count), timeoutMicroseconds, &message, message.count)
        guard count >= 0 else {
            throw ReelError(.sourceUnavailable, PipeWireText.string(message), hint: "PipeWire went away (restarted?)")
        }
        return buffer.prefix(Int(count)).compactMap(Self.event)
    }

    private static func event(_ e: reel_pw_graph_event) -> PipeWireGraphEvent? {
        switch e.kind {
        case Int32(REEL_PW_NODE_ADDED.rawValue):
            return .nodeAdded(PipeWireNode(id: e.id, mediaClass: PipeWireText.field(e.media_class), name: PipeWireText.field(e.node_name),
                                           applicationName: PipeWireText.field(e.application_name), binary: PipeWireText.field(e.binary),
                                           processID: e.pid >= 0 ? e.pid : nil))
        case Int32(REEL_PW_NODE_REMOVED.rawValue): return .nodeRemoved(e.id)
        case Int32(REEL_PW_PORT_ADDED.rawValue):
            return .portAdded(PipeWirePort(id: e.id, node: e.node, isOutput: e.output != 0, isMonitor: e.monitor != 0,
                                           channel: PipeWireText.field(e.channel)))
        case Int32(REEL_PW_PORT_REMOVED.rawValue): return .portRemoved(e.id)
        case Int32(REEL_PW_LINK_FAILED.rawValue): return .linkFailed(e.id, PipeWireText.field(e.message))
        default: return nil
        }
    }

    func link(_ output: PipeWirePort, to input: PipeWirePort) throws(ReelError) -> UInt32 {
        var message = [CChar](repeating: 0, count: 256)
        let handle = reel_pw_graph_link(graph, output.node, output.id, input.node, input.id, &message, message.count)
        guard handle != 0 else { throw ReelError(.sourceUnavailable, PipeWireText.string(message)) }
        return handle
    }

    func unlink(_ handle: UInt32) { reel_pw_graph_unlink(graph, handle) }
}

/// Records the monitor of a sink of Reel's own on a PipeWire daemon: the ``PulseAudioServer``
/// that a ``PulseAudioSource`` records application audio through on PipeWire. Opening a
/// recording makes the sink (an internal null sink, named as the request's device without its
/// `.monitor`), so that a source that reconnects after the daemon restarted makes it anew; it
/// goes with the recording.
package struct PipeWireSinkCapture: PulseAudioServer {
    /// The daemon (`nil`: the usual one).
    package let remote: String?

    package init(remote: String?) { self.remote = remote }

    package func checkDevice(_ request: PulseRecordRequest) throws(ReelError) {
        _ = try SystemPipeWireGraph().connect(remote: remote)
    }

    package func openRecording(_ request: PulseRecordRequest, isCancelled: @escaping () -> Bool) throws(ReelError) -> any PulseAudioRecording {
        let device = request.device ?? request.lookupName
        let sink = device.hasSuffix(".monitor") ? String(device.dropLast(".monitor".count)) : device
        var message = [CChar](repeating: 0, count: 256)
        guard let capture = reel_pw_capture_open(remote, sink, UInt32(request.format.sampleRate), UInt32(request.format.channels),
                                                 &message, message.count) else {
            throw ReelError(.sourceUnavailable, PipeWireText.string(message), hint: "check that PipeWire runs: systemctl --user status pipewire")
        }
        return SinkRecording(capture, bytesPerFrame: request.format.bytesPerFrame)
    }
}

/// An open capture of Reel's sink.
private final class SinkRecording: PulseAudioRecording {
    private let capture: OpaquePointer
    private let bytesPerFrame: Int
    private var chunk = [UInt8](repeating: 0, count: 65_536)
    /// When the newest sound taken arrived (CLOCK_MONOTONIC nanoseconds).
    private var newest: UInt64 = 0
    /// Reel's sink is captured as a monitor is: what it renders.
    let isMonitor = true
    /// It notes the cycles it missed and what did not fit its buffer.
    let saysItsLosses = true

    init(_ capture: OpaquePointer, bytesPerFrame: Int) {
        self.capture = capture
        self.bytesPerFrame = bytesPerFrame
    }

    deinit { reel_pw_capture_close(capture) }

    func pump(timeoutMicroseconds: Int32) throws(ReelError) {
        var message = [CChar](repeating: 0, count: 256)
        guard reel_pw_capture_wait(capture, timeoutMicroseconds, &message, message.count) >= 0 else {
            throw ReelError(.sourceUnavailable, PipeWireText.string(message))
        }
    }

    func read(appendingTo buffer: inout [UInt8]) throws(ReelError) -> Int {
        var total = 0
        while true {
            let taken = chunk.withUnsafeMutableBufferPointer { reel_pw_capture_read(capture, $0.baseAddress, $0.count, &newest) }
            guard taken > 0 else { return total }
            buffer.append(contentsOf: chunk[0..<taken])
            total += taken
        }
    }

    func takeLosses() -> [RecordedLoss] {
        var losses = [reel_pw_loss](repeating: reel_pw_loss(), count: Int(REEL_PW_LOSSES))
        let count = losses.withUnsafeMutableBufferPointer { reel_pw_capture_take_losses(capture, $0.baseAddress, Int32($0.count)) }
        return losses.prefix(Int(max(0, count))).map { RecordedLoss(start: Int64($0.start), frames: Int64($0.frames), kind: $0.kind == REEL_PW_LOSS_OVERFLOW ? .overflow : .missedCycles) }
    }

    /// The newest sound was rendered into the sink when it arrived (the monitor is read in the
    /// same cycle): how long ago that was.
    var latency: MediaTime {
        guard newest > 0 else { return .zero }
        return max(.zero, HostClock().now() - MediaTime(nanoseconds: Int64(newest)))
    }
}
