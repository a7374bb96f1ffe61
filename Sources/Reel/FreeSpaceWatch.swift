import Foundation
import Synchronization
import ReelSystem

/// Looks at a recording's disk on a queue of its own, so that the recorder's thread makes no
/// system call for it: in clip mode it first follows the clips folder (renamed, moved or
/// deleted while recorded: see ``RecordingSession/followFolder()``), then reads the free space
/// of the folder the recording fills. The recorder asks for a fresh look
/// (``refresh(onDisk:)``, which returns at once) and decides from the last reading published
/// (``latest``), taken with the bytes its files held on the disk when asked (see
/// ``FreeSpaceGuard``: what reached the disk since is taken off).
package final class FreeSpaceWatch: Sendable {
    /// Reads the free space of a folder (or the nearest above it that exists); tests give figures.
    package typealias Reader = @Sendable (URL) -> (available: Int64, total: Int64)?

    /// What reads the free space; `nil`: none is read (no minimum), the folder only followed.
    private let reader: Reader?
    /// The folder whose disk is read, asked on the watch's queue after ``follow``.
    private let folder: @Sendable () -> URL
    /// Follows the clips folder before the free space is read (clip mode).
    private let follow: (@Sendable () -> Void)?
    private let queue = DispatchQueue(label: "reel.free-space")
    private let published: Mutex<FreeSpaceGuard.Reading?>
    /// A look asked for and not done yet: asks meanwhile are one.
    private let asked = Atomic<Bool>(false)

    /// A watch of `folder`'s disk, read once now (on the caller's thread: the recording's
    /// preparation) unless `reads` is false; `follow` runs before each later reading.
    package init(folder: @escaping @Sendable () -> URL, reads: Bool = true, reader: Reader? = nil,
                 follow: (@Sendable () -> Void)? = nil) {
        let reader = reads ? reader ?? { FreeSpace.ofNearest($0) } : nil
        self.reader = reader
        self.folder = folder
        self.follow = follow
        published = Mutex(reader.flatMap { Self.read(folder(), reader: $0, onDisk: 0) })
    }

    /// A watch that reads the free space of `folder` (see ``init(folder:reads:reader:follow:)``).
    package convenience init(folder: URL, reader: Reader? = nil) {
        self.init(folder: { folder }, reader: reader)
    }

    /// The last reading published; `nil` if the disk could not be told, or is not read.
    package var latest: FreeSpaceGuard.Reading? { published.withLock { $0 } }

    /// Asks for the folder to be followed and its disk read again, the recording's files
    /// holding `onDisk` bytes now; returns at once. An ask while one is under way is that one.
    package func refresh(onDisk: Int64) {
        guard asked.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        queue.async { [self] in
            follow?()
            if let reader {
                let reading = Self.read(folder(), reader: reader, onDisk: onDisk)
                published.withLock { $0 = reading }
            }
            asked.store(false, ordering: .releasing)
        }
    }

    /// Waits until the look asked for last is done (tests, and the recording's end).
    package func settle() {
        queue.sync {}
    }

    private static func read(_ folder: URL, reader: Reader, onDisk: Int64) -> FreeSpaceGuard.Reading? {
        reader(folder).map { FreeSpaceGuard.Reading(available: $0.available, total: $0.total, onDisk: onDisk) }
    }
}

extension Recorder {
    /// What reads the free space of the recording's disk for ``Settings/minimumFreeSpace``
    /// (tests: figures of a disk of their own making); `nil`: the disk's own. Called on the
    /// recording's free-space queue (and once at its start), never on the recorder's thread.
    /// Set before the start.
    package var freeSpaceReader: FreeSpaceWatch.Reader? {
        get { state.withLock { $0.freeSpaceReader } }
        set { state.withLock { $0.freeSpaceReader = newValue } }
    }
}
