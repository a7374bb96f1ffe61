import Foundation
import ReelCore

/// Flushes a video encoder that was replaced (a change of preset) on a thread of its own, so
/// that the thread that records goes on handing frames to the new encoder meanwhile.
///
/// libx264 holds its lookahead, B-frames and frame threads' pictures (about 15 frames at
/// veryfast, 40 and more from medium on); encoding them all at once took the recorder's thread
/// about 240 ms at 1080p, and the capture lost frames. Here the flush's thread owns the old
/// encoder outright (nothing else holds it: ``VideoEncoder`` is used from one thread at a
/// time) and puts its packets in a list behind a lock; the owner takes them from there, in
/// order, on its own thread (``take()``, ``waitForEnd()``), and writes them to its sinks.
final class VideoEncoderFlush: @unchecked Sendable {
    /// What the flush has given that the owner has not taken, and how it ended, if it has.
    private struct Shared {
        var packets: [EncodedPacket] = []
        var end: Result<Void, any Error>?
    }

    /// Hands the encoder to the flush's thread: from then on only that thread touches it.
    private struct Handover: @unchecked Sendable { let encoder: VideoEncoder }

    /// Guards `shared` (hence unchecked Sendable), and wakes ``waitForEnd()``.
    private let condition = NSCondition()
    private var shared = Shared()

    /// Starts flushing `encoder` on a thread of its own; `beforeFlush` (tests) runs on that
    /// thread first, and what it throws ends the flush as an error of the flush would.
    init(_ encoder: VideoEncoder, beforeFlush: (@Sendable () throws -> Void)? = nil) {
        let handover = Handover(encoder: encoder)
        _ = WorkerThread(name: "reel-video-flush") { [self] _ in run(handover.encoder, beforeFlush: beforeFlush) }
    }

    private func run(_ encoder: VideoEncoder, beforeFlush: (@Sendable () throws -> Void)?) {
        do {
            try beforeFlush?()
            try encoder.finish()
            while case .packet(let packet) = try encoder.receive() {
                condition.withLock { shared.packets.append(packet) }
            }
            ended(.success(()))
        } catch {
            ended(.failure(error))
        }
    }

    private func ended(_ end: Result<Void, any Error>) {
        condition.lock()
        shared.end = end
        condition.broadcast()
        condition.unlock()
    }

    /// The packets flushed since the last call, in order, and how the flush ended if it has
    /// (every packet was then taken); does not wait.
    func take() -> (packets: [EncodedPacket], end: Result<Void, any Error>?) {
        condition.withLock {
            defer { shared.packets = [] }
            return (shared.packets, shared.end)
        }
    }

    /// Like ``take()``, once the flush has ended.
    func waitForEnd() -> (packets: [EncodedPacket], end: Result<Void, any Error>) {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let end = shared.end {
                defer { shared.packets = [] }
                return (shared.packets, end)
            }
            condition.wait()
        }
    }
}
