/// A recording's minimum of free space as a value: when the disk is looked at (every recorded
/// second, and every quarter megabyte written, so that a fast recording — a busy screen, or
/// faster than real time — stops near the minimum, not megabytes past it), and whether what was
/// read leaves the minimum free.
///
/// It decides from figures it is given: the free space read on another thread (a
/// ``Reading``, taken with the bytes the recording held on the disk by then) less what reached
/// the disk since, and the bytes still on their way to it. Reading the disk is its owner's (see `FreeSpaceWatch`), never
/// the recorder thread's.
package struct FreeSpaceGuard: Sendable {
    /// What the disk said at one moment, and how much the recording had written by then.
    package struct Reading: Sendable, Hashable {
        /// The bytes an unprivileged user may still write on the file system.
        package var available: Int64
        /// The file system's size (0: one that keeps no files, such as /proc).
        package var total: Int64
        /// The bytes the recording's files held on the disk when it was read.
        package var onDisk: Int64

        package init(available: Int64, total: Int64, onDisk: Int64) {
            self.available = available
            self.total = total
            self.onDisk = onDisk
        }
    }

    /// The bytes to keep free; `nil`: no minimum (only the cadence is kept).
    package let minimum: Int64?
    private var nextCheck = MediaTime.zero
    private var nextCheckBytes: Int64 = 0

    package init(minimum: Int64?) {
        self.minimum = minimum
    }

    /// Whether the disk is to be looked at now, `recorded` and `written` bytes of media into
    /// the recording: a second recorded or a quarter megabyte written since the last time (at once
    /// the first time). Once it says so, the next is counted from here.
    package mutating func isDue(recorded: MediaTime, written: Int64) -> Bool {
        guard recorded >= nextCheck || written >= nextCheckBytes else { return false }
        nextCheck = recorded + MediaTime(value: 1, timescale: 1)
        nextCheckBytes = written + 256 * 1024
        return true
    }

    /// Whether `reading`, less what reached the disk since (the recording's files hold
    /// `onDisk` bytes now), leaves less than the minimum free once `toCome` more bytes (the
    /// fragment being filled, the frames in the encoder, the index) reach it; or the disk keeps
    /// no files at all. No reading (the disk could not be told) and no minimum leave enough.
    /// `reserved` of the bytes on the disk are space the recording's files keep for
    /// themselves (an MP4's index reservation, counted in `onDisk` from the start): not used
    /// up by the recording, so not counted as used (a 20 MB disk with 18 MB asked to stay free
    /// stopped before its first frame once the file reserved 3 MB).
    package func leavesTooLittle(_ reading: Reading?, onDisk: Int64, toCome: Int64, reserved: Int64 = 0) -> Bool {
        guard let minimum, let reading else { return false }
        if reading.total == 0 { return true }
        return reading.available + reserved - max(0, onDisk - reading.onDisk) < minimum + toCome
    }
}
