import Foundation
import Synchronization
import ReelSystem

/// Reads the free space of a recording's disk on a queue of its own, so that the recorder's
/// thread makes no system call for it: the recorder asks for a fresh reading
/// (``refresh(in:onDisk:)``, which returns at once) and decides from the last one published
/// (``latest``), taken with the bytes its files held on the disk when asked (see
/// ``FreeSpaceGuard``: what reached the disk since is taken off).
package final class FreeSpaceWatch: Sendable {
    /// Reads the free space of a folder (or the nearest above it that exists); tests give figures.
    package typealias Reader = @Sendable (URL) -> (available: Int64, total: Int64)?

    private let reader: Reader
    private let queue = DispatchQueue(label: "reel.free-space")
    private let published: Mutex<FreeSpaceGuard.Reading?>
    /// A reading asked for and not published yet: asks meanwhile are one.
    private let asked = Atomic<Bool>(false)

    /// A watch of `folder`, read once now (on the caller's thread: the recording's preparation).
    package init(folder: URL, reader: Reader? = nil) {
        let reader = reader ?? { FreeSpace.ofNearest($0) }
        self.reader = reader
        published = Mutex(Self.read(folder, reader: reader, onDisk: 0))
    }

    /// The last reading published; `nil` if the disk could not be told.
    package var latest: FreeSpaceGuard.Reading? { published.withLock { $0 } }

    /// Asks for `folder` to be read again, the recording's files holding `onDisk` bytes now;
    /// returns at once. An ask while one is under way is that one.
    package func refresh(in folder: URL, onDisk: Int64) {
        guard asked.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        queue.async { [self] in
            let reading = Self.read(folder, reader: reader, onDisk: onDisk)
            published.withLock { $0 = reading }
            asked.store(false, ordering: .releasing)
        }
    }

    /// Waits until the reading asked for last is published (tests).
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
