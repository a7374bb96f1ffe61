/// Why a limit stops a recording.
package enum LimitReason: Sendable, Hashable {
    /// Its maximum recorded duration.
    case maxDuration
    /// Its maximum file size.
    case maxFileSize
    /// The disk down to the minimum of free space.
    case lowDiskSpace
}

/// What a recording's limit says after a sample: the recorder only acts on it.
package enum LimitAction: Sendable, Hashable {
    /// Go on recording.
    case goOn
    /// Go on (a take paused at its limit), and a stop from now on is for `reason`.
    case reached(LimitReason)
    /// Stop for `reason`: the recording's end is the recorded time `at`.
    case stop(LimitReason, at: MediaTime)
}

/// A recording's maximum file size as a value: from what the file (or the clips and their
/// merge) will come to, it says whether to stop before the next frame would not fit.
package struct FileSizeLimit: Sendable, Hashable {
    /// What the recording holds and will hold, in bytes, after a sample.
    package struct Figures: Sendable, Hashable {
        /// What the file comes to once what it has and what is still in the encoder are in it,
        /// and its index (in clip mode: every clip's share of the merged file, and the merge's
        /// room).
        package var projected: Int64
        /// A typical frame of the file (the next two must fit).
        package var typicalFrameBytes: Int64
        /// The file refused a packet (it is full), or no room is left for another clip.
        package var full: Bool

        package init(projected: Int64, typicalFrameBytes: Int64, full: Bool = false) {
            self.projected = projected
            self.typicalFrameBytes = typicalFrameBytes
            self.full = full
        }
    }

    /// The bytes the file may hold; `nil`: no limit.
    package let maximum: Int64?

    package init(maximum: Int64?) {
        self.maximum = maximum
    }

    /// Stop while the next frame and what the encoder still holds fit (the file refuses what
    /// would take it past the maximum), or once the file is full; else go on.
    package func action(_ figures: Figures, at time: MediaTime) -> LimitAction {
        guard let maximum else { return .goOn }
        if figures.full || figures.projected + 2 * figures.typicalFrameBytes >= maximum { return .stop(.maxFileSize, at: time) }
        return .goOn
    }
}

/// A recording's maximum duration as a value: the ``RecordingMachine`` cuts the recording at
/// its limit (the frame past it, every track's sound at it); this says what that means for the
/// recording once the machine has said where it stands.
package struct DurationLimit: Sendable, Hashable {
    /// The recorded time allowed; `nil`: no limit.
    package let maximum: MediaTime?

    package init(maximum: MediaTime?) {
        self.maximum = maximum
    }

    /// `reached`: the machine came to the limit; `complete`: it takes nothing more (every
    /// stream at its end). Complete, the recording stops there; at its limit but not complete
    /// (a take paused at its limit), it goes on, and a stop from now on is for its duration.
    package func action(reached: Bool, complete: Bool, at time: MediaTime) -> LimitAction {
        if complete { return .stop(.maxDuration, at: time) }
        return reached ? .reached(.maxDuration) : .goOn
    }
}

extension FreeSpaceGuard {
    /// ``leavesTooLittle(_:onDisk:toCome:reserved:)`` as an action: stop for the disk, or go on.
    package func action(_ reading: Reading?, onDisk: Int64, toCome: Int64, reserved: Int64 = 0, at time: MediaTime) -> LimitAction {
        leavesTooLittle(reading, onDisk: onDisk, toCome: toCome, reserved: reserved) ? .stop(.lowDiskSpace, at: time) : .goOn
    }
}
