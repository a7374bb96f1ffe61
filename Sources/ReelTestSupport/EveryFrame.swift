import Foundation
import Testing
import Reel

/// Checks that a recording of a real-time source holds every frame it captured: a source
/// driven by the wall clock may miss a frame on a loaded machine (CI runs three suites side by
/// side on two cores), which the recording reports as dropped. So a test does not demand
/// every frame of the time recorded; it demands that the file's frames (read by their
/// burned-in counters) are in order with none twice, that they are as many as the recording
/// says it wrote, and that those and the ones it says it dropped make up the whole (exact
/// counts failed on CI with no word of how many were dropped).
public enum EveryFrame {
    /// `counters` (the burned-in counters of the frames in the file, in order) against what
    /// the recording reported: `frames` written and `dropped`; `total` the frames of the time
    /// recorded, when the test knows it.
    public static func expect(_ counters: [Int64], of total: Int? = nil, frames: Int?, dropped: Int?,
                              _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        let said = "\(counters.count) frames in the file, reported \(frames.map(String.init) ?? "?") written and \(dropped.map(String.init) ?? "?") dropped"
            + (comment.map { ": \($0)" } ?? "")
        #expect(zip(counters, counters.dropFirst()).allSatisfy { $0 < $1 }, "in order, none twice (\(said)): \(counters)",
                sourceLocation: sourceLocation)
        #expect(counters.count == frames, "\(said)", sourceLocation: sourceLocation)
        if let total { #expect(counters.count + (dropped ?? -1) == total, "\(said) of \(total)", sourceLocation: sourceLocation) }
        // A frame missing between two in the file is one the recording reported.
        #expect(missing(in: counters) <= (dropped ?? -1), "\(said); \(missing(in: counters)) missing between them",
                sourceLocation: sourceLocation)
    }

    /// ``expect(_:of:frames:dropped:_:sourceLocation:)`` against a library recording's summary.
    public static func expect(_ counters: [Int64], of total: Int? = nil, summary: RecordingSummary,
                              _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        expect(counters, of: total, frames: Int(summary.frames), dropped: Int(summary.droppedFrames), comment, sourceLocation: sourceLocation)
    }

    /// ``expect(_:of:frames:dropped:_:sourceLocation:)`` against a `finished` event of `--json`.
    public static func expect(_ counters: [Int64], of total: Int? = nil, finished: [String: Any]?,
                              _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        expect(counters, of: total, frames: finished?["frames"] as? Int, dropped: finished?["dropped"] as? Int, comment,
               sourceLocation: sourceLocation)
    }

    /// The frames the recording's text summary reports ("video … 58 frames, 2 dropped"), as
    /// (written, dropped); `nil` when it has no such line.
    public static func reported(inSummary text: String) -> (frames: Int, dropped: Int)? {
        for line in text.split(separator: "\n") {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "," })
            guard let f = words.firstIndex(of: "frames"), f > 0, let frames = Int(words[f - 1]),
                  let d = words.firstIndex(of: "dropped"), d > f + 1, let dropped = Int(words[d - 1]) else { continue }
            return (frames, dropped)
        }
        return nil
    }

    /// The frames missing between the first and the last of `counters` (in order).
    public static func missing(in counters: [Int64]) -> Int {
        guard let first = counters.first, let last = counters.last, last >= first else { return 0 }
        return Int(last - first + 1) - counters.count
    }
}

extension RGBColor {
    /// Checks every one of `frames` (RGB pictures `width` pixels wide) at each of `points`:
    /// the colour averaged around it (radius 3) is one `holds` accepts, else an issue names the
    /// frame, the point, `what` was expected there and the colour found.
    public static func expect(_ frames: [[UInt8]], width: Int, at points: [(Int, Int)], _ what: String,
                              sourceLocation: SourceLocation = #_sourceLocation, _ holds: (RGBColor) -> Bool) {
        for (i, frame) in frames.enumerated() {
            for (x, y) in points {
                let c = average(of: frame, width: width, x: x, y: y, radius: 3)
                #expect(holds(c), "frame \(i) at (\(x), \(y)): \(what): \(c)", sourceLocation: sourceLocation)
            }
        }
    }
}
