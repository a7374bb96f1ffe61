#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import ReelCore

extension Syscall {
    /// Copies the first `count` bytes of the file at `source` (all of it when `nil`) into a new
    /// file at `target`, which must not exist, and syncs it. Errors name `source` for reading
    /// and `shown` (the file the user will know, `target` if `nil`) for writing.
    ///
    /// - Returns: the number of bytes copied.
    @discardableResult
    package static func copyFile(_ source: URL, bytes count: Int64? = nil, to target: URL, shown: URL? = nil) throws -> Int64 {
        let shown = shown ?? target
        let input = try call(orThrow: { fileError($0, at: source, action: "read") }) { open(source.path, O_RDONLY | O_CLOEXEC) }
        defer { close(input) }
        let output = try call(orThrow: { fileError($0, creating: shown, action: "create") }) {
            open(target.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var done: Int64 = 0
        while count.map({ done < $0 }) ?? true {
            let wanted = Int(min(Int64(buffer.count), (count ?? Int64.max) - done))
            let n = try buffer.withUnsafeMutableBytes { raw in
                try readAll(input, into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<wanted]), at: done,
                            orThrow: { fileError($0, at: source, action: "read") })
            }
            if n == 0 {
                // The end of the file: where a copy of all of it ends, and too soon for a count.
                if count == nil { break }
                throw fileError(EIO, at: source, action: "read")
            }
            try buffer.withUnsafeBytes { raw in
                try writeAll(output, UnsafeRawBufferPointer(rebasing: raw[0..<n]), orThrow: { fileError($0, creating: shown, action: "write") })
            }
            done += Int64(n)
        }
        try call(orThrow: { fileError($0, creating: shown, action: "write") }) { fsync(output) }
        return done
    }
}
