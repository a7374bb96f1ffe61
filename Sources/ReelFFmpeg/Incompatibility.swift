import Foundation

/// Why clips cannot be joined by copying.
/// Why clips cannot be joined by copying: thrown by the copying join and turned into an
/// `.incompatibleClips` error (or a re-encode) by ``Merger``.
struct Incompatibility: Error {
    var message: String
    var hint: String
    init(_ message: String, hint: String) {
        self.message = message
        self.hint = hint
    }
}
