import Foundation
import ReelCore

/// What a live stream is set up with and what it reports: its options, its statistics and
/// its events.
extension LiveStream {
    /// How a live stream sends.
    public struct Options: Sendable, Hashable {
        /// The most bytes of encoded media waiting to be sent; past it, whole groups of
        /// pictures are dropped (the default, 8 MB, is several seconds at usual streaming rates).
        public var maxQueuedBytes: Int64
        /// How long connecting, and sending one packet, may block before the connection is
        /// taken for broken.
        public var timeout: MediaTime
        /// The first pause before reconnecting; it doubles after each failed attempt.
        public var initialBackoff: MediaTime
        /// The longest pause between attempts to reconnect.
        public var maximumBackoff: MediaTime
        /// The TCP socket's send buffer (RTMP): what the kernel holds beyond the queue. Small
        /// keeps the delay short and lets the queue see a slow link soon; large rides out
        /// short stalls. 256 KB by default.
        public var sendBufferBytes: Int
        /// HLS: how long each segment is (it starts on a keyframe, so at least the keyframe
        /// interval).
        public var segmentDuration: MediaTime
        /// HLS: how many segments the playlist lists (older ones are deleted), or `nil` for the
        /// whole event (every segment stays, the playlist grows).
        public var playlistWindow: Int?
        /// HLS: MPEG-TS segments (`.ts`, every player) or fragmented MP4 (`.m4s` and an
        /// `init.mp4`).
        public var segmentFormat: SegmentFormat
        /// RTMPS: the certificate authorities the server's certificate must be signed by (a
        /// PEM file). `nil` (the default) takes `SSL_CERT_FILE` from the environment if set,
        /// else the system's. The certificate is always checked, and must name the host:
        /// the stream key goes to no one else.
        public var certificateAuthorities: URL? = nil
        /// SRT: the stream ID and passphrase, given apart from the address so that they never
        /// show, not even in the process list when the address comes from a command line (see
        /// ``LiveStream/SRTSecrets``). None by default.
        public var srtSecrets = SRTSecrets()

        /// The kind of HLS segments.
        public enum SegmentFormat: String, Sendable, Hashable, CaseIterable {
            /// MPEG-TS segments (`.ts`), which every HLS player takes.
            case mpegts = "ts"
            /// Fragmented MP4 segments (`.m4s`) after an `init.mp4`.
            case fmp4
        }

        /// Options with the given values.
        public init(maxQueuedBytes: Int64 = 8 << 20, timeout: MediaTime = MediaTime(value: 5, timescale: 1),
                    initialBackoff: MediaTime = MediaTime(value: 1, timescale: 2),
                    maximumBackoff: MediaTime = MediaTime(value: 8, timescale: 1), sendBufferBytes: Int = 256 * 1024,
                    segmentDuration: MediaTime = MediaTime(value: 2, timescale: 1), playlistWindow: Int? = 6,
                    segmentFormat: SegmentFormat = .mpegts) {
            self.sendBufferBytes = sendBufferBytes
            self.segmentDuration = segmentDuration
            self.playlistWindow = playlistWindow
            self.segmentFormat = segmentFormat
            self.maxQueuedBytes = maxQueuedBytes
            self.timeout = timeout
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
        }
    }

    /// What a live stream has sent and dropped so far.
    public struct Statistics: Sendable, Hashable {
        /// The stream's address without its key (``LiveStream/name``).
        public var name: String
        /// Whether it is connected now.
        public var isConnected: Bool
        /// Bytes of encoded media sent (all connections together).
        public var bytesSent: Int64
        /// Packets sent.
        public var packetsSent: Int64
        /// The rate media was sent at over about the last second, in bits per second.
        public var bitrate: Int64
        /// Bytes waiting to be sent.
        public var queuedBytes: Int64
        /// The most bytes that have waited at once (never much more than
        /// ``Options/maxQueuedBytes``: one packet at most).
        public var mostQueuedBytes: Int64
        /// Video frames that were not sent (queue full, or waiting for a keyframe after a
        /// reconnect); the file beside the stream has them.
        public var droppedFrames: Int64
        /// Groups of pictures dropped, whole or their unsent rest.
        public var droppedGroups: Int64
        /// Bytes dropped (video and audio).
        public var droppedBytes: Int64
        /// How many times the stream connected again after losing its connection.
        public var reconnects: Int
        /// Why the stream stopped for good before the recording did, if it did: HLS that could
        /// not be written, or a server whose connection broke and was not back when the
        /// recording stopped (nothing after the loss reached it; an SRT listener's player that
        /// left is not counted).
        public var failure: ReelError? = nil
        /// Whether the stream has ended (the recording stopped, or it failed).
        public var hasEnded = false
    }

    /// Something that happened to a live stream.
    public enum Event: Sendable {
        /// The connection broke (or a reconnect failed for the first time); the stream keeps
        /// trying, and the recording goes on.
        case interrupted(name: String, error: ReelError)
        /// The stream is connected again and sends from a keyframe.
        case resumed(name: String)
        /// The stream stopped for good and the recording goes on without it: HLS that could not
        /// be written (a full disk, say), which is not retried, since starting again would
        /// write its playlist and segments over the ones already there. Also said at the stop
        /// of a stream whose server was lost and had not come back (``Statistics/failure``).
        case failed(name: String, error: ReelError)
    }
}
