import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// Turns FFmpeg return codes into `ReelError`s.
enum FFmpeg {
    /// The text FFmpeg gives for an error code.
    static func describe(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Throws a `ReelError` with `code` when `result` is negative; returns it otherwise.
    @discardableResult
    static func check(_ result: Int32, _ what: @autoclosure () -> String,
                      code: ReelError.Code = .encodingFailed, hint: String? = nil) throws -> Int32 {
        guard result < 0 else { return result }
        throw error(result, what(), code: code, hint: hint)
    }

    /// A `ReelError` for an FFmpeg failure. An `AVERROR` that is an error number is classified
    /// by the one errno mapping (`Syscall.code(forErrno:absent:otherwise:)`): a full disk, a
    /// refusal, a busy device have codes of their own whatever `code` the caller gave; a
    /// missing file keeps the caller's code (an unavailable source, say), or is an I/O failure
    /// if the caller expected an encoding failure.
    static func error(_ result: Int32, _ what: String, code: ReelError.Code = .encodingFailed, hint: String? = nil) -> ReelError {
        var code = code
        var hint = hint
        var errnoValue: Int32?
        if result > -4096 && result < 0 {
            // AVERROR(e) is -e for system errors.
            let e = -result
            errnoValue = e
            code = Syscall.code(forErrno: e, absent: code == .encodingFailed ? .ioFailure : code, otherwise: code)
            switch code {
            case .insufficientStorage: hint = hint ?? "free some disk space or record to another disk"
            case .permissionDenied: hint = hint ?? "choose a folder you can write to"
            default: break
            }
        }
        return ReelError(code, "\(what): \(describe(result))", hint: hint, errno: errnoValue, averror: result)
    }

    static let eagain = reel_averror_eagain()
    static let eof = reel_averror_eof()
    static let noPTS = reel_av_nopts_value()
}

extension AVRational {
    init(_ time: MediaTime) { self.init(num: Int32(time.value), den: time.timescale) }
}
