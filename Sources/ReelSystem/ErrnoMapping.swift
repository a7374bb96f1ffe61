#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import ReelCore

/// The one mapping from an error number to a ``ReelError``, used by every target: the
/// syscall funnel, the file writers, and FFmpeg's `AVERROR`s that are error numbers.
extension Syscall {
    /// The kind of failure that error number `code` is.
    ///
    /// `EACCES`/`EPERM`/`EROFS` are `.permissionDenied`, `EBUSY`/`ETXTBSY` `.busy`,
    /// `ENOSPC`/`EDQUOT`/`EFBIG` `.insufficientStorage`, `EEXIST` `.fileExists`, `EIO`
    /// `.ioFailure`. A thing that is not there (`ENOENT`, `ENODEV`, `ENXIO`, `ENOTDIR`) is
    /// `absent`: `.sourceUnavailable` for a device or an input (the default), `.ioFailure` for
    /// a file or folder Reel reads or writes itself. Anything else is `otherwise`.
    package static func code(forErrno code: Int32, absent: ReelError.Code = .sourceUnavailable,
                             otherwise: ReelError.Code = .ioFailure) -> ReelError.Code {
        switch code {
        case EACCES, EPERM, EROFS: return .permissionDenied
        case EBUSY, ETXTBSY: return .busy
        case ENOSPC, EDQUOT, EFBIG: return .insufficientStorage
        case EEXIST: return .fileExists
        case EIO: return .ioFailure
        case ENOENT, ENODEV, ENXIO, ENOTDIR: return absent
        default: return otherwise
        }
    }

    /// The ``ReelError`` for a call that failed with `errno`: its code from
    /// ``code(forErrno:absent:otherwise:)`` (a missing thing is a source that is unavailable),
    /// the message "`what` failed: `strerror`".
    package static func error(_ what: String, errno code: Int32, hint: String? = nil) -> ReelError {
        ReelError(self.code(forErrno: code), "\(what) failed: \(describe(code))", hint: hint, errno: code)
    }

    /// The ``ReelError`` for a failure with `errno` to `action` ("create", "write", "replace")
    /// the file at `url`, which Reel writes: a name that is taken, a folder that is missing or
    /// not writable, a full disk, each said in words.
    package static func fileError(_ e: Int32, creating url: URL, action: String) -> ReelError {
        let folder = url.deletingLastPathComponent().path
        switch code(forErrno: e, absent: .ioFailure) {
        case .fileExists:
            return ReelError(.fileExists, "\(url.path) already exists", hint: LibraryHint.allowOverwriting, errno: e)
        case .permissionDenied:
            return ReelError(.permissionDenied, "cannot write to \(folder)", hint: "choose a folder you can write to", errno: e)
        case .insufficientStorage:
            return ReelError(.insufficientStorage, "no space left to \(action) \(url.path)", errno: e)
        case let kind where e == ENOENT || e == ENOTDIR:
            return ReelError(kind, "the folder \(folder) does not exist", hint: "create it first or choose another", errno: e)
        case let kind:
            return ReelError(kind, "cannot \(action) \(url.path): \(describe(e))", errno: e)
        }
    }

    /// The ``ReelError`` for a failure with `errno` to `action` ("open", "read", "write") the
    /// existing file at `url`, which Reel reads or changes in place: "cannot `action` FILE:
    /// `strerror`", with the code of the one mapping (a missing file is an I/O failure).
    package static func fileError(_ e: Int32, at url: URL, action: String) -> ReelError {
        let kind = code(forErrno: e, absent: .ioFailure)
        if kind == .insufficientStorage {
            return ReelError(kind, "no space left to \(action) \(url.path)", errno: e)
        }
        return ReelError(kind, "cannot \(action) \(url.path): \(describe(e))", errno: e)
    }

    /// The system's text for an error number ("Permission denied"), thread-safe.
    package static func describe(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        // The XSI strerror_r: 0 on success, with the text in `buffer`.
        let status = buffer.withUnsafeMutableBufferPointer { strerror_r(code, $0.baseAddress!, $0.count) }
        guard status == 0 else { return "errno \(code)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
