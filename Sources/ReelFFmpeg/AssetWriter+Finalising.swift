import Foundation
import ReelCore
import ReelSystem

/// Finalising a fragmented MP4/MOV into a regular one (at the end of a recording, and for
/// `reel recover`), and what a writer says when it cannot.
extension AssetWriter {
    /// Makes the fragmented MP4/MOV at `url` a regular one with its index at the front: in place
    /// if `inPlace` and the file has space reserved for the index (see `MP4Finaliser`), else
    /// (or if the in-place way finds anything unexpected, having changed nothing) by copying.
    /// `shift` is where the recording starts on the fragmented file's timeline. With
    /// `copyWhenSmall` a recording smaller than the unused reservation is copied instead.
    @discardableResult
    public static func finalise(_ url: URL, container: Container, shift: MediaTime = .zero, inPlace: Bool,
                                copyWhenSmall: Bool = false) throws -> Finalisation {
        try finalise(url, container: container, shift: shift, inPlace: inPlace, copyWhenSmall: copyWhenSmall, fault: nil)
    }

    /// ``finalise(_:container:shift:inPlace:copyWhenSmall:)`` with `fault` injected into the
    /// in-place way (tests).
    static func finalise(_ url: URL, container: Container, shift: MediaTime, inPlace: Bool, copyWhenSmall: Bool,
                         fault: MP4Finaliser.Fault?) throws -> Finalisation {
        var reason = "no space was reserved for the index"
        var inPlaceWorks = false
        if inPlace {
            do {
                let outcome = try MP4Finaliser.finalise(url, shift: shift, copyWhenSmall: copyWhenSmall, fault: fault)
                return .inPlace(bytesWritten: outcome.bytesWritten)
            } catch let fallback as MP4Finaliser.CopyInstead {
                reason = fallback.reason
                inPlaceWorks = fallback.isChoice
            }
        }
        do {
            try finalise(url, container: container, shift: shift)
        } catch let error as ReelError where inPlaceWorks && [.permissionDenied, .insufficientStorage, .ioFailure].contains(error.code) {
            // The smaller copy could not be written beside the file (its folder was made
            // read-only, the disk is full): in place after all, keeping the unused reservation.
            let outcome = try MP4Finaliser.finalise(url, shift: shift, copyWhenSmall: false, fault: fault)
            return .inPlace(bytesWritten: outcome.bytesWritten)
        }
        let bytes = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
        return .copied(reason: reason, bytesWritten: bytes)
    }

    /// Rewrites a fragmented MP4/MOV at `url` as a regular one with its index at the front, by
    /// copying it. The fragmented file is replaced only once the new one is complete and on the
    /// disk.
    public static func finalise(_ url: URL, container: Container, shift: MediaTime = .zero) throws {
        // Locked as being written from its creation until it has taken the file's place.
        let temporary = FilePlacement.temporaryURL(beside: url, purpose: "finalising")
        // On failure the temporary file is a partial copy of ours, the original untouched.
        let copy: Remuxer.Copy
        do {
            copy = try Remuxer.copyPackets(of: url, to: temporary, container: container, fastStart: true, overwrite: false, shift: shift)
        } catch {
            // Our partial copy, unless its name was taken meanwhile (then it is not ours).
            if (error as? ReelError)?.code != .fileExists { unlink(temporary.path) }
            throw error
        }
        defer { copy.lock?.release() }
        do {
            try FilePlacement.place(temporary, at: url, replacing: true, what: "the finalised file")
        } catch {
            // Our copy, unless its name was taken (then it is not ours to remove).
            if (error as? ReelError)?.code != .fileExists { unlink(temporary.path) }
            throw error
        }
    }

    /// Runs `body`, adding to a full disk's error how to get the recording back: the file keeps
    /// what was completely written (for MP4/MOV the complete fragments), which recovering it
    /// finalises: an MP4/MOV on the full disk too, another file once there is space.
    func advisingRecoveryWhenFull<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch var error as ReelError where error.code == .insufficientStorage {
            // A file that holds nothing yet (the disk filled before its first fragment, or a
            // replacement's hidden file that is gone) is nothing to recover.
            guard Recovery.isCutOff(url) else {
                error.hint = "the disk filled before anything was recorded; free some space and record again"
                throw error
            }
            let recover = "reel recover \(Shell.quoted(url.path))"
            error.hint = configuration.container.isISOBaseMedia
                ? "finalise what was recorded with: \(recover) (which works on the full disk too)"
                : "free some disk space, then finalise what was recorded with: \(recover)"
            throw error
        }
    }

    /// The device and inode of the file at `url` itself (not a link's target), if there is one.
    static func identity(of url: URL) -> [UInt64]? {
        var info = stat()
        guard lstat(url.path, &info) == 0 else { return nil }
        return [UInt64(info.st_dev), UInt64(info.st_ino)]
    }

    /// Whether `url` is a regular file itself (not a link to one).
    static func isRegularFile(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// The size of the file at `url`, if it can be told.
    static func fileSize(_ url: URL) -> Int64? {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value
    }
}
