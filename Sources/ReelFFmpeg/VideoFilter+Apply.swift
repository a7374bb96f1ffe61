internal import CFFmpeg
import Foundation
import Synchronization
import ReelCore

extension VideoFilter {
    /// This filter's picture of `frame`, as a new frame of the same format, size (scaled back
    /// when the filter changes it) and time: what
    /// Core Image's `outputImage` gives for an `inputImage`, for a picture application code
    /// holds (one from a ``SampleHandlerOutput``, a decoded file, its own drawing). `frame` is
    /// left as it is.
    ///
    /// ```swift
    /// let comic = try VideoFilter.look(.comic).apply(to: frame)
    /// ```
    ///
    /// The filter's graph is built for the first picture of a format and size and kept for
    /// the next ones, so filtering a stream of pictures costs what filtering on the capture
    /// path does. Safe from any thread.
    ///
    /// - Throws: `.invalidConfiguration` when the filter cannot be applied to such a picture
    ///   (a crop larger than it, say) or gives no picture for it (a filter that holds pictures
    ///   back).
    public func apply(to frame: VideoFrame) throws -> VideoFrame {
        let planes = (0..<frame.format.planeCount).map { plane in
            frame.withUnsafePlane(plane) { bytes, stride in (bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), stride) }
        }
        var result: VideoFrame?
        try withExtendedLifetime(frame) {
            try FilterGraphCache.shared.use(self, pixelFormat: VideoEncoder.avPixelFormat(frame.format), format: frame.format, size: frame.size) { graph in
                var made: VideoFrame?
                var failure: Error?
                let got = graph.filter(planes: planes, time: frame.presentationTime) { plane, row in
                    if made == nil {
                        do {
                            made = try VideoFrame(format: frame.format, size: frame.size, presentationTime: frame.presentationTime,
                                                  sequenceNumber: frame.sequenceNumber) { _, _, _ in }
                        } catch {
                            failure = error
                        }
                    }
                    made?.withUnsafeMutablePlane(plane) { bytes, stride in
                        guard let to = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
                        let count = frame.format.rowBytes(plane: plane, width: frame.width)
                        for y in 0..<frame.format.rows(plane: plane, height: frame.height) { (to + y * stride).update(from: row(y), count: count) }
                    }
                }
                if let failure { throw failure }
                guard got, var made else { throw Self.noPicture(self) }
                made.captureTime = frame.captureTime
                result = made
            }
        }
        guard let result else { throw Self.noPicture(self) }
        return result
    }

    /// This filter's picture of a live frame (see ``apply(to:)-(VideoFrame)``): a new live frame of the
    /// same format, size, time and source, for an app that filters what it shows (a SwiftUI
    /// view of ``LiveFrames``) without filtering what is recorded.
    ///
    /// - Throws: `.invalidConfiguration` as ``apply(to:)-(VideoFrame)`` does.
    public func apply(to frame: LiveFrame) throws -> LiveFrame {
        let pixelFormat: AVPixelFormat = switch frame.format {
        case .bgra: AV_PIX_FMT_BGRA
        case .rgba: AV_PIX_FMT_RGBA
        case .nv12: AV_PIX_FMT_NV12
        case .gray: AV_PIX_FMT_GRAY8
        }
        var result: LiveFrame?
        try Self.withPlanes(of: frame) { planes in
            try FilterGraphCache.shared.use(self, pixelFormat: pixelFormat, format: nil, size: frame.size) { graph in
                var delivered: [Int: [[UInt8]]] = [:]
                let got = graph.filter(planes: planes, time: frame.presentationTime) { plane, row in
                    let rows = plane == 0 ? frame.height : frame.height / 2
                    let rowBytes = plane == 0 ? frame.width * frame.format.bytesPerPixel : frame.width
                    delivered[plane] = (0..<rows).map { Array(UnsafeBufferPointer(start: row($0), count: rowBytes)) }
                }
                guard got, delivered.count == frame.format.planeCount else { throw Self.noPicture(self) }
                result = LiveFrame(format: frame.format, size: frame.size, presentationTime: frame.presentationTime,
                                   sequenceNumber: frame.sequenceNumber, source: frame.source) { starts, bytesPerRow in
                    for (plane, rows) in delivered {
                        for (y, bytes) in rows.enumerated() {
                            (starts[plane] + y * bytesPerRow[plane]).copyMemory(from: bytes, byteCount: bytes.count)
                        }
                    }
                }
            }
        }
        guard let result else { throw Self.noPicture(self) }
        return result
    }

    /// Calls `body` with the start and bytes per row of each of `frame`'s planes.
    private static func withPlanes(of frame: LiveFrame, from plane: Int = 0, _ gathered: [(UnsafePointer<UInt8>?, Int)] = [],
                                   _ body: ([(UnsafePointer<UInt8>?, Int)]) throws -> Void) throws {
        guard plane < frame.format.planeCount else { return try body(gathered) }
        try frame.withUnsafePlane(plane) { bytes, bytesPerRow in
            try withPlanes(of: frame, from: plane + 1, gathered + [(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytesPerRow)], body)
        }
    }

    private static func noPicture(_ filter: VideoFilter) -> ReelError {
        ReelError(.invalidConfiguration, "the filter \(filter) gave no picture for the one it was given (it holds pictures back, drops them or changes the frame rate)",
                  hint: "filters that keep one picture per picture can be applied to a single picture")
    }
}

extension Sequence<VideoFilter> {
    /// `frame` through each filter in order, as a chain of Core Image filters (see
    /// ``VideoFilter/apply(to:)-(VideoFrame)``); `frame` itself for no filters.
    public func apply(to frame: VideoFrame) throws -> VideoFrame {
        try reduce(frame) { try $1.apply(to: $0) }
    }

    /// `frame` through each filter in order (see ``VideoFilter/apply(to:)-(LiveFrame)``).
    public func apply(to frame: LiveFrame) throws -> LiveFrame {
        try reduce(frame) { try $1.apply(to: $0) }
    }
}

/// Filter graphs built for application code's pictures, kept by filter, format and size so
/// that a stream of pictures builds each once. A graph is used by one caller at a time; a few
/// are kept for each shape, and the shapes least recently used go first.
final class FilterGraphCache: Sendable {
    static let shared = FilterGraphCache()

    private struct Key: Hashable {
        var graph: String
        var pixelFormat: Int32
        var size: PixelSize
    }
    private struct Kept: @unchecked Sendable {
        var graphs: [FilterGraph]
        var used: UInt64
    }
    private let state = Mutex<(kept: [Key: Kept], clock: UInt64)>(([:], 0))
    private let shapes = 16
    private let perShape = 4

    /// Runs `body` with a graph of `filter` for such pictures, built if none is free.
    func use(_ filter: VideoFilter, pixelFormat: AVPixelFormat, format: PixelFormat?, size: PixelSize,
             _ body: (FilterGraph) throws -> Void) throws {
        let key = Key(graph: filter.graph, pixelFormat: pixelFormat.rawValue, size: size)
        let free = state.withLock { s -> FilterGraph? in
            s.clock += 1
            guard var kept = s.kept[key], !kept.graphs.isEmpty else { return nil }
            let graph = kept.graphs.removeLast()
            kept.used = s.clock
            s.kept[key] = kept
            return graph
        }
        let graph = try free ?? FilterGraph(graph: filter.graph, pixelFormat: pixelFormat, format: format, size: size)
        defer {
            state.withLock { s in
                var kept = s.kept[key] ?? Kept(graphs: [], used: s.clock)
                if kept.graphs.count < perShape { kept.graphs.append(graph) }
                s.kept[key] = kept
                if s.kept.count > shapes, let oldest = s.kept.min(by: { $0.value.used < $1.value.used })?.key {
                    s.kept[oldest] = nil
                }
            }
        }
        try body(graph)
    }
}
