import Foundation
import Synchronization
import ReelCore
import ReelSystem

/// A clip's file on the opening thread (see ``ClipFileSink``): made ahead, unlisted, and
/// removed again if its clip never comes.
extension ClipFileSink {
    /// A clip's file made on the opening thread ahead of its first packet, listed there when
    /// that comes, then handed to the encoder's thread. Its variables are the opening thread's
    /// (its jobs run one at a time); ``outcome`` is how the file reaches the encoder's thread.
    final class Opening: @unchecked Sendable {
        let clip: Int
        var configuration: AssetWriter.Configuration
        var file: MovieFileSink?
        var failure: (any Error)?
        /// The file listed, or why it could not be made or listed: set once, then signalled.
        let outcome = Mutex<Result<Handed, any Error>?>(nil)
        let published = DispatchSemaphore(value: 0)

        init(clip: Int, configuration: AssetWriter.Configuration) {
            self.clip = clip
            self.configuration = configuration
        }
    }

    /// A clip's file on its way from one thread to another (made, to the encoder's, to the
    /// finishing thread), owned by the one it reaches.
    struct Handed: @unchecked Sendable { let file: MovieFileSink }

    /// Makes `opening`'s file where its folder is now (on the opening thread): its header,
    /// nothing else; unlisted.
    static func make(_ opening: Opening, streams: [EncodedStream], placing: @Sendable (URL) throws -> URL) {
        do {
            opening.configuration.url = try placing(opening.configuration.url)
            let file = try MovieFileSink(configuration: opening.configuration)
            do {
                for stream in streams { try file.add(stream) }
                try file.begin()
            } catch {
                file.discard()
                throw error
            }
            opening.file = file
        } catch {
            opening.failure = error
        }
    }

    /// Removes a file made ahead that holds nothing but its header, wherever it is now (its
    /// folder moved: there); on the opening thread.
    static func remove(_ file: MovieFileSink) {
        if case .moved(let now)? = file.lock?.whereabouts(expected: file.url) { file.placement.found(movedTo: now) }
        file.discard()
    }
}
