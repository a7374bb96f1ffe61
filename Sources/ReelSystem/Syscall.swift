#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import ReelCore

/// The one funnel for system calls, shared by every target.
///
/// Every `open`, `close`, `ioctl`, `mmap`, `pread`, `fsync`, `flock`… goes through here: a call
/// interrupted by a signal (`EINTR`) is retried in this file and nowhere else, and a failure
/// becomes a ``ReelError`` through the one errno mapping (``code(forErrno:absent:otherwise:)``).
package enum Syscall {
    /// An error number a call failed with, for callers that treat some failures as answers
    /// (`EWOULDBLOCK` from a lock that is held, `EEXIST` from a name that is taken).
    package struct Errno: Error, Hashable, Sendable {
        /// The error number.
        package var rawValue: Int32
        /// Wraps `rawValue`.
        package init(_ rawValue: Int32) { self.rawValue = rawValue }
    }

    /// Runs `body`, a system call that returns `-1` and sets `errno` on failure, retrying while
    /// it is interrupted (`EINTR`).
    ///
    /// - Returns: the call's result, or the error number it failed with.
    package static func attempt<T: BinaryInteger>(_ body: () -> T) -> Result<T, Errno> {
        while true {
            let result = body()
            if result != -1 { return .success(result) }
            let code = errno
            if code == EINTR { continue }
            return .failure(Errno(code))
        }
    }

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
        try call(orThrow: { error(what, errno: $0, hint: hint) }, body)
    }

    /// Runs `body` like ``call(_:hint:_:)``, with the error for a failure made by `failure`
    /// from the error number (a caller with messages of its own, such as "cannot write FILE").
    @discardableResult
    package static func call<T: BinaryInteger>(orThrow failure: (Int32) -> ReelError, _ body: () -> T) throws -> T {
        switch attempt(body) {
        case .success(let result): return result
        case .failure(let e): throw failure(e.rawValue)
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

    /// Writes all of `bytes` to `fd` (at `offset`, with `pwrite`, if given; else at the file
    /// position), retrying short writes and interruptions.
    ///
    /// - Throws: the error `failure` makes from the error number of a failed write.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64? = nil,
                                 orThrow failure: (Int32) -> ReelError) throws {
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let n = try call(orThrow: failure) { () -> Int in
                if let offset { return pwrite(fd, base + done, bytes.count - done, off_t(offset) + off_t(done)) }
                return write(fd, base + done, bytes.count - done)
            }
            // A write of nothing to a regular file does not happen; take it as a full disk
            // rather than loop forever.
            guard n > 0 else { throw failure(ENOSPC) }
            done += n
        }
    }

    /// Makes the disk keep the blocks under `range` for `fd` beyond its end without changing
    /// its size (`fallocate(FALLOC_FL_KEEP_SIZE)`): writes there later need no new room, so
    /// they succeed on a disk that another program has filled meanwhile. Fails with `ENOSPC`
    /// when the disk has not that much room left, `EOPNOTSUPP` where the file system keeps none.
    package static func keepRoom(_ fd: Int32, range: Range<Int64>) -> Result<Void, Errno> {
        guard !range.isEmpty else { return .success(()) }
        typealias Fallocate = @convention(c) (Int32, Int32, off_t, off_t) -> Int32
        guard let symbol = fallocateSymbol else { return .failure(Errno(ENOSYS)) }
        let call = unsafeBitCast(symbol, to: Fallocate.self)
        let keepSize: Int32 = 0x01  // FALLOC_FL_KEEP_SIZE
        return attempt { call(fd, keepSize, off_t(range.lowerBound), off_t(range.count)) }.map { _ in () }
    }

    /// Gives the file system back the blocks under `range` of `fd`'s file, keeping the file's
    /// size (`fallocate` with `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`): the range then reads
    /// as zeros, as before if it held zeros, and takes no room until written again. Only whole
    /// blocks are freed; parts of blocks at the ends are zeroed in place.
    ///
    /// - Returns: the error number if the call failed (`EOPNOTSUPP` on a file system that
    ///   cannot make holes).
    /// (`fallocate` is looked up, as Glibc's module does not declare it.)
    package static func punchHole(_ fd: Int32, range: Range<Int64>) -> Result<Void, Errno> {
        guard !range.isEmpty else { return .success(()) }
        typealias Fallocate = @convention(c) (Int32, Int32, off_t, off_t) -> Int32
        guard let symbol = fallocateSymbol else { return .failure(Errno(ENOSYS)) }
        let call = unsafeBitCast(symbol, to: Fallocate.self)
        let keepSize: Int32 = 0x01, punchHole: Int32 = 0x02  // FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE
        return attempt { call(fd, punchHole | keepSize, off_t(range.lowerBound), off_t(range.count)) }.map { _ in () }
    }

    private nonisolated(unsafe) static let fallocateSymbol = dlsym(nil, "fallocate")

    /// Reads up to `buffer.count` bytes at `offset` into `buffer` with `pread`, retrying short
    /// reads and interruptions; fewer only at the end of the file.
    ///
    /// - Returns: the number of bytes read.
    /// - Throws: the error `failure` makes from the error number of a failed read.
    package static func readAll(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64,
                                orThrow failure: (Int32) -> ReelError) throws -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let n = try call(orThrow: failure) { pread(fd, base + done, buffer.count - done, off_t(offset) + off_t(done)) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// The whole text of a file the kernel makes as it is read (`/proc/locks`,
    /// `/proc/PID/stat`), read to its end however long it is: such files say their size is 0,
    /// and a reader that trusts the size or reads one page gets only part of them. `nil` if it
    /// cannot be opened or read.
    package static func kernelText(atPath path: String) -> String? {
        guard case .success(let fd) = attempt({ open(path, O_RDONLY | O_CLOEXEC) }) else { return nil }
        defer { close(fd) }
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            guard case .success(let n) = attempt({ chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }) else { return nil }
            if n == 0 { break }
            text.append(contentsOf: chunk[0..<n])
        }
        return String(decoding: text, as: UTF8.self)
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
}
