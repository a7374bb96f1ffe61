import Foundation
import Synchronization
import ReelCore

/// How a filter treats a stream of pictures. libavfilter's filters say nothing about it (a
/// blend of two branches of one picture and a blend of a picture with the one before look
/// alike to it), so it is found out when a ``VideoFilter`` is made: a dozen test pictures, some
/// repeated, go through the graph as they would while recording, and what comes out is
/// compared.
package enum FilterTiming: Sendable, Hashable {
    /// One picture for each it is given, at once, made from that picture alone: the same
    /// picture gives the same result whatever came before it and whenever it comes. A picture
    /// that did not change stays unchanged, so its identity can be carried through.
    case pictureByPicture
    /// One picture for each it is given (after holding back its first `heldBack`), but what
    /// it makes depends on the pictures before it or on the time: a blend over time, a
    /// denoiser, an effect that moves.
    case withMemory(heldBack: Int)
    /// Not one picture for each, each in its turn: `gave` for `given` (it changes the frame
    /// rate, drops or adds pictures), or each one `late` (it gives an earlier picture's).
    case notOneForOne(given: Int, gave: Int, late: Bool)

    /// What a filter of this timing does to a recording, for messages.
    package var explanation: String {
        switch self {
        case .pictureByPicture:
            return "it makes each picture from that picture alone"
        case .withMemory(let heldBack):
            return heldBack == 0 ? "what it makes of a picture depends on the pictures before it or on the time"
                                 : "it holds back its first \(heldBack == 1 ? "picture" : "\(heldBack) pictures"), and what it makes depends on the pictures before"
        case .notOneForOne(let given, let gave, let late):
            return late ? "it gives each picture late (an earlier picture for each it is given)"
                        : "it changes how many pictures there are (\(gave) for \(given) given)"
        }
    }
}

/// Finds a graph's ``FilterTiming`` by running it (once per graph text; the answer is kept).
enum FilterProbe {
    private static let known = Mutex<[String: FilterTiming]>([:])

    /// The timing of `graph` (already checked: it builds). A graph that cannot be built for the
    /// test pictures counts as ``FilterTiming/withMemory(heldBack:)`` with none held back, the
    /// answer that promises nothing.
    static func timing(of graph: String) -> FilterTiming {
        if let timing = known.withLock({ $0[graph] }) { return timing }
        let timing = measure(graph)
        known.withLock { $0[graph] = timing }
        return timing
    }

    /// The test pictures' contents, in the order given: some repeated after others, some
    /// repeated at once.
    static let sequence = [0, 1, 0, 0, 2, 2, 0, 1, 1, 0, 0, 0]

    private static func measure(_ graph: String) -> FilterTiming {
        // A small picture first; a large one for a graph that needs it (a crop meant for a real source).
        for size in [PixelSize(width: 320, height: 240), PixelSize(width: 3840, height: 2160)] {
            guard let filterGraph = try? FilterGraph(graph: graph, format: .yuv420p, size: size) else { continue }
            return measure(filterGraph, size: size)
        }
        return .withMemory(heldBack: 0)
    }

    private static func measure(_ graph: FilterGraph, size: PixelSize) -> FilterTiming {
        let pool = FramePool(format: .yuv420p, size: size, capacity: 2)
        let rate = FrameRate(30)
        var counts: [Int] = []
        var results: [(content: Int, digest: UInt64)] = []
        var late = false
        for (index, content) in sequence.enumerated() {
            let time = rate.time(ofFrame: Int64(index))
            guard let picture = try? testPicture(content, size: size, at: time), let out = pool.makeFrame() else { return .withMemory(heldBack: 0) }
            let (pictures, outTime) = graph.filterCounting(picture, into: out)
            counts.append(pictures)
            guard pictures > 0 else { continue }
            if let outTime, outTime < time - MediaTime(value: 1, timescale: 1_000_000) { late = true }
            results.append((content, digest(out)))
        }
        let heldBack = counts.prefix { $0 == 0 }.count
        let given = counts.count, gave = counts.reduce(0, +)
        guard heldBack <= 4, counts.dropFirst(heldBack).allSatisfy({ $0 == 1 }), !late else {
            return .notOneForOne(given: given, gave: gave, late: late && heldBack <= 4 && counts.dropFirst(heldBack).allSatisfy { $0 == 1 })
        }
        guard heldBack == 0 else { return .withMemory(heldBack: heldBack) }
        // The same picture, the same result, whatever came before and whenever it came.
        var seen: [Int: UInt64] = [:]
        for (content, result) in results {
            if let earlier = seen[content], earlier != result { return .withMemory(heldBack: 0) }
            seen[content] = result
        }
        return .pictureByPicture
    }

    /// Test picture `content` (0, 1, 2: a horizontal ramp, a vertical one, a checkerboard, each
    /// with its own colour) at `time`.
    private static func testPicture(_ content: Int, size: PixelSize, at time: MediaTime) throws -> VideoFrame {
        try VideoFrame(format: .yuv420p, size: size, presentationTime: time) { plane, bytes, stride in
            let width = plane == 0 ? size.width : size.width / 2, height = plane == 0 ? size.height : size.height / 2
            for y in 0..<height {
                for x in 0..<width {
                    let value: Int
                    switch content {
                    case 0: value = plane == 0 ? 16 + x * 219 / max(1, width - 1) : 90 + 40 * plane
                    case 1: value = plane == 0 ? 16 + y * 219 / max(1, height - 1) : 200 - 50 * plane
                    default: value = plane == 0 ? ((x / 8 + y / 8) % 2 == 0 ? 40 : 200) : 128 + 30 * (plane == 1 ? 1 : -1)
                    }
                    bytes[y * stride + x] = UInt8(value)
                }
            }
        }
    }

    /// A digest of a picture's pixels (FNV-1a over each plane's rows).
    private static func digest(_ frame: VideoFrame) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for plane in 0..<frame.format.planeCount {
            frame.withUnsafePlane(plane) { bytes, stride in
                let rowBytes = frame.format.rowBytes(plane: plane, width: frame.width)
                for row in 0..<frame.format.rows(plane: plane, height: frame.height) {
                    for i in 0..<rowBytes {
                        hash = (hash ^ UInt64(bytes[row * stride + i])) &* 0x100_0000_01b3
                    }
                }
            }
        }
        return hash
    }
}
