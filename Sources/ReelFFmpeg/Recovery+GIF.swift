import Foundation
import ReelCore
import ReelSystem

/// GIF recordings cut off before their stop. A recording into `NAME.gif` is written into a
/// hidden intermediate beside it, `.NAME.gif-PID-N.mp4` (a fragmented MP4, crash-safe like any
/// recording), and made into the GIF only at the stop. One cut off (a crash, a kill, a failed
/// conversion) is that intermediate: recovering it finalises it and makes it into the GIF,
/// then removes it. It is never removed before the GIF is complete and has its name.
extension Recovery {
    /// The purpose in the name of a GIF recording's intermediate (`.NAME.gif-PID-N.mp4`).
    static let gifIntermediatePurpose = "gif"

    /// A new name for the intermediate of a recording into the GIF `url`: hidden beside it,
    /// `.NAME.gif-PID-N.mp4`, unique.
    package static func gifIntermediate(for url: URL) -> URL {
        FilePlacement.temporaryURL(beside: url, purpose: gifIntermediatePurpose,
                                   pathExtension: Container.gif.intermediateContainer?.fileExtension)
    }

    /// The intermediates of recordings into the GIF `url` that were cut off: those beside it
    /// that no recorder is writing now, in name order.
    public static func cutOffGIFRecordings(of url: URL) -> [URL] {
        let ext = Container.gif.intermediateContainer?.fileExtension ?? "mp4"
        return FilePlacement.temporaryFiles(beside: url, purposes: [gifIntermediatePurpose])
            .filter { $0.pathExtension == ext && gifTarget(ofIntermediate: $0) != nil && !RecordingLock.isBeingWritten($0) }
    }

    /// The GIF that `url` is the intermediate of (`.NAME.gif-PID-N.mp4` → `NAME.gif` beside
    /// it), or `nil` if its name is not such an intermediate's.
    public static func gifTarget(ofIntermediate url: URL) -> URL? {
        let name = url.lastPathComponent
        let ext = "." + (Container.gif.intermediateContainer?.fileExtension ?? "mp4")
        guard name.hasPrefix("."), name.hasSuffix(ext) else { return nil }
        let inner = name.dropFirst().dropLast(ext.count)
        guard let marker = inner.range(of: ".\(gifIntermediatePurpose)-", options: .backwards), marker.lowerBound > inner.startIndex else {
            return nil
        }
        let fields = inner[marker.upperBound...].split(separator: "-", omittingEmptySubsequences: false)
        guard fields.count == 2, fields.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }) else { return nil }
        return url.deletingLastPathComponent().appendingPathComponent(String(inner[..<marker.lowerBound]) + ".gif")
    }

    /// Recovers a GIF recording if `url` names one: a `.gif` (its cut-off intermediate beside
    /// it) or an intermediate itself (into its GIF, or `output` if that is a `.gif` or a
    /// folder). `nil` if `url` is no GIF recording (or an intermediate recovered into another
    /// kind of file, as any recording).
    static func recoverGIF(_ url: URL, to output: URL?, overwrite: Bool, meter: ProgressMeter) throws -> Summary? {
        let intermediate: URL
        let gif: URL
        if url.pathExtension.lowercased() == "gif" {
            let leftovers = cutOffGIFRecordings(of: url)
            guard let first = leftovers.first else {
                if FileIdentity.isRegularFile(url) { return try summary(of: url, finalisation: .notNeeded) }
                throw ReelError(.ioFailure, "no recording of \(url.lastPathComponent) was cut off in \(url.deletingLastPathComponent().path): there is nothing to recover",
                                hint: "a GIF recording cut off before its stop is kept beside it as a hidden .\(url.deletingPathExtension().lastPathComponent).gif-….mp4")
            }
            guard leftovers.count == 1 else {
                throw ReelError(.invalidConfiguration, "\(leftovers.count) cut-off recordings of \(url.lastPathComponent) are beside it: "
                                + leftovers.map(\.lastPathComponent).joined(separator: ", "),
                                hint: "recover them one at a time, giving the hidden file itself and a name for each GIF")
            }
            intermediate = first
            gif = gifLocation(output: output, named: url)
        } else if let named = gifTarget(ofIntermediate: url), output.map({ isFolder($0) || $0.pathExtension.lowercased() == "gif" }) ?? true {
            intermediate = url
            gif = gifLocation(output: output, named: named)
        } else {
            return nil
        }
        try checkReadableFile(intermediate)
        // An empty file there is the name a recording reserved for its GIF (nothing to lose).
        let reserved = FileIdentity.isRegularFile(gif) && FileIdentity.size(of: gif) == 0
        if !overwrite && !reserved && FileManager.default.fileExists(atPath: gif.path) {
            throw ReelError(.fileExists, "\(gif.path) exists: the cut-off recording in \(intermediate.lastPathComponent) is not made into a GIF over it",
                            hint: LibraryHint.nameTheGIF)
        }
        // Finalised where it is first (one whose conversion failed is complete already).
        var recovered = try recoverRecording(intermediate, to: nil, overwrite: false, meter: meter)
        meter.restart(as: .converting, total: 2 * (FileIdentity.size(of: intermediate) ?? 0))
        let converted: GIFConverter.Summary
        do {
            converted = try GIFConverter.convert(intermediate, to: gif, overwrite: overwrite || reserved, meter: meter)
        } catch let error as ReelError where error.code == .insufficientStorage {
            // No room for the GIF (a disk that filled under the recording): the recording
            // stays in the intermediate, finalised, whatever the disk does.
            throw ReelError(.insufficientStorage, "no room on the disk to make \(gif.path): \(error.message); the recording is kept in \(intermediate.path), which plays",
                            hint: "free that much disk space, then \(LibraryHint.makeTheGIF(gif.path)); \(LibraryHint.makeTheGIFOnAnotherDisk)",
                            errno: error.errno, averror: error.averror)
        }
        // The GIF is complete and has its name: the intermediate's work is done.
        unlink(intermediate.path)
        recovered.url = converted.url
        recovered.videoFrames = converted.frames
        recovered.finalisation = .copied(reason: "made into a GIF", bytesWritten: converted.bytes)
        return recovered
    }

    /// Recovers the cut-off recording `url` (not a GIF recording's) into the GIF `gif`: into a
    /// hidden intermediate beside it (an MP4, as a GIF recording's), made into the GIF, then
    /// removed. The recording is only read: if the GIF cannot be made, the intermediate goes
    /// too and the recording holds everything still. A complete recording needs nothing.
    static func recoverIntoGIF(_ url: URL, gif: URL, overwrite: Bool, meter: ProgressMeter) throws -> Summary {
        if AudioFileRecovery.kind(of: url) != nil {
            throw ReelError(.unsupportedFormat, "\(url.lastPathComponent) holds sound only: it cannot be made into a GIF",
                            hint: "recover it into a file of its own kind (give no output, or one of its extension)")
        }
        if !overwrite && FileManager.default.fileExists(atPath: gif.path) {
            throw Syscall.fileError(EEXIST, creating: gif, action: "create")
        }
        let intermediate = gifIntermediate(for: gif)
        // Whatever happens from here, the intermediate goes: the recording is only read.
        defer { unlink(intermediate.path) }
        var recovered = try recoverRecording(url, to: intermediate, overwrite: false, meter: meter)
        // A complete recording needs nothing, and nothing was written (its summary names it).
        if recovered.finalisation == .notNeeded { return recovered }
        meter.restart(as: .converting, total: 2 * (FileIdentity.size(of: intermediate) ?? 0))
        let converted = try GIFConverter.convert(intermediate, to: gif, overwrite: overwrite, meter: meter)
        recovered.url = converted.url
        recovered.videoFrames = converted.frames
        recovered.finalisation = .copied(reason: "made into a GIF", bytesWritten: converted.bytes)
        return recovered
    }

    /// The GIF `output` means for a recording into `named`: `named`'s name in a folder, `.gif`
    /// added to a name without an extension.
    private static func gifLocation(output: URL?, named: URL) -> URL {
        guard let output else { return named }
        if isFolder(output) { return output.appendingPathComponent(named.lastPathComponent) }
        return output.pathExtension.isEmpty ? output.appendingPathExtension("gif") : output
    }

    static func isFolder(_ url: URL) -> Bool {
        var info = stat()
        return stat(url.path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}
