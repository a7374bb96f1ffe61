#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ReelCore

/// The one funnel for system calls in ReelLinux.
///
/// Every `open`, `close`, `ioctl`, `mmap`, `shmget`… goes through here: a call interrupted by a
/// signal (`EINTR`) is retried, and a failure becomes a ``ReelError`` whose code says what kind
/// of failure it was and whose `errno` records the system's answer.
package enum Syscall {
    /// Runs `body`, a system call that returns `-1` and sets `errno` on failure, retrying while
    /// it is interrupted (`EINTR`).
    ///
    /// - Parameters:
    ///   - what: what the call does, for the message ("opening /dev/video0").
    ///   - hint: what the user can do when the call fails, if the caller knows.
    /// - Returns: the call's result when it is not `-1`.
    /// - Throws: a ``ReelError`` made by ``error(_:errno:hint:)``.
    @discardableResult
    package static func call<T: BinaryInteger>(_ what: String, hint: String? = nil, _ body: () -> T) throws -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = errno
            if code == EINTR { continue }
            throw error(what, errno: code, hint: hint)
        }
    }

    /// Runs `body`, a system call that returns a pointer and signals failure with `NULL` or
    /// `(void *)-1` (`mmap`'s `MAP_FAILED`, `shmat`), retrying while it is interrupted.
    ///
    /// - Returns: the pointer the call returned.
    /// - Throws: a ``ReelError`` made by ``error(_:errno:hint:)``.
    package static func pointer(_ what: String, hint: String? = nil,
                                _ body: () -> UnsafeMutableRawPointer?) throws -> UnsafeMutableRawPointer {
        while true {
            let result = body()
            if let result, result != UnsafeMutableRawPointer(bitPattern: -1) { return result }
            let code = errno
            if code == EINTR { continue }
            throw error(what, errno: code, hint: hint)
        }
    }

    /// Runs `body`, a call that returns `0` on success and an error number on failure (the
    /// `pthread_*` and `clock_nanosleep` convention), retrying on `EINTR`.
    package static func callReturningError(_ what: String, hint: String? = nil, _ body: () -> Int32) throws {
        while true {
            let code = body()
            if code == 0 { return }
            if code == EINTR { continue }
            throw error(what, errno: code, hint: hint)
        }
    }

    /// Closes a file descriptor once. Unlike other calls, `close` is not retried on `EINTR`:
    /// on Linux the descriptor is released even then, and a retry could close another file
    /// that reused the number.
    package static func close(_ fd: Int32) {
        #if canImport(Glibc)
        _ = Glibc.close(fd)
        #else
        _ = Musl.close(fd)
        #endif
    }

    /// The ``ReelError`` for a call that failed with `errno`.
    ///
    /// `EACCES`/`EPERM` become `.permissionDenied`, `EBUSY` `.busy`, `ENOENT`/`ENODEV`/`ENXIO`
    /// `.sourceUnavailable`, `ENOSPC`/`EDQUOT` `.insufficientStorage`, anything else
    /// `.ioFailure`. The message reads "`what` failed: `strerror`".
    package static func error(_ what: String, errno code: Int32, hint: String? = nil) -> ReelError {
        let kind: ReelError.Code
        switch code {
        case EACCES, EPERM: kind = .permissionDenied
        case EBUSY: kind = .busy
        case ENOENT, ENODEV, ENXIO: kind = .sourceUnavailable
        case ENOSPC, EDQUOT: kind = .insufficientStorage
        default: kind = .ioFailure
        }
        return ReelError(kind, "\(what) failed: \(describe(code))", hint: hint, errno: code)
    }

    /// The system's text for an error number ("Permission denied").
    package static func describe(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        // The XSI strerror_r: 0 on success, with the text in `buffer`.
        let status = buffer.withUnsafeMutableBufferPointer { strerror_r(code, $0.baseAddress!, $0.count) }
        guard status == 0 else { return "errno \(code)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
