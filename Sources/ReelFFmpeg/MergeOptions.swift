import Foundation
import ReelCore

/// How ``Merger`` joins clips.
public struct MergeOptions: Sendable, Hashable {
    /// Whether clips that cannot be joined by copying (another size, codec, sample rate or
    /// encoder settings) may be decoded and encoded again. Without it such clips are refused
    /// with a `.incompatibleClips` error that names the clip and what differs.
    public var allowsReencoding: Bool
    /// Whether an existing output file may be replaced. It is replaced only once the merged
    /// file is complete.
    public var overwrite: Bool
    /// The output's container; `nil` takes it from the output's file extension.
    public var container: Container?

    /// Options with re-encoding and overwriting off and the container taken from the file name.
    public init(allowsReencoding: Bool = false, overwrite: Bool = false, container: Container? = nil) {
        self.allowsReencoding = allowsReencoding
        self.overwrite = overwrite
        self.container = container
    }
}
