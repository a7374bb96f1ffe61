import Foundation
import ReelCore

/// A camera mode: a pixel format at a frame size and frame rate.
public struct V4L2Mode: Sendable, Hashable, CustomStringConvertible {
    /// The pixel format the camera delivers.
    public var fourCC: V4L2FourCC
    /// The frame size.
    public var size: PixelSize
    /// The frame rate.
    public var frameRate: FrameRate

    /// Creates a mode.
    public init(fourCC: V4L2FourCC, size: PixelSize, frameRate: FrameRate) {
        self.fourCC = fourCC
        self.size = size
        self.frameRate = frameRate
    }

    /// "MJPG 1920x1080 @ 30 fps".
    public var description: String { "\(fourCC) \(size) @ \(V4L2FrameRates.format(frameRate)) fps" }
}

/// The mode chosen for a request: what was asked, what the camera will deliver and, when they
/// differ, why.
///
/// The rule (``V4L2Device/negotiate(size:frameRate:format:decodableFormats:)``):
///
/// 1. Only formats Reel can capture take part: uncompressed `YUYV` and `NV12`, and `MJPG`/`JPEG`
///    when a decoder for MJPEG is at hand. A requested format restricts the choice to it; if the
///    camera lacks it (or Reel cannot capture it), every capturable format takes part and a
///    warning says so.
/// 2. The nearest frame size wins, measured by the ratio of areas (so 1280x720 is as far from
///    1920x1080 as 2880x1620 would be); between sizes equally near, the larger (scaling down
///    loses nothing), then the one nearest in aspect ratio. A range of sizes offers the
///    requested size clamped into it and rounded to its step.
/// 3. At that size, the nearest frame rate wins, again by ratio; between rates equally near,
///    the faster.
/// 4. Between formats that are equal on size and rate, the requested one, then the raw ones
///    (`YUYV`, then `NV12`: no decoding, no compression artefacts), then MJPEG.
///
/// So an exact match always wins, a raw format is preferred where it meets the size and rate,
/// and MJPEG is taken where only it reaches them (a webcam's 1920x1080 at 30 fps).
public struct V4L2Negotiation: Sendable, Hashable {
    /// The requested frame size.
    public var requestedSize: PixelSize
    /// The requested frame rate.
    public var requestedFrameRate: FrameRate
    /// The requested pixel format, if one was.
    public var requestedFormat: V4L2FourCC?
    /// The mode the camera will deliver.
    public var chosen: V4L2Mode
    /// How the chosen mode differs from the request, one sentence each; empty for an exact match.
    public var warnings: [String]

    /// Creates a negotiation result.
    public init(requestedSize: PixelSize, requestedFrameRate: FrameRate, requestedFormat: V4L2FourCC?,
                chosen: V4L2Mode, warnings: [String]) {
        self.requestedSize = requestedSize
        self.requestedFrameRate = requestedFrameRate
        self.requestedFormat = requestedFormat
        self.chosen = chosen
        self.warnings = warnings
    }

    /// Whether the camera delivers exactly what was asked.
    public var isExactMatch: Bool { warnings.isEmpty }

    /// The warnings as one text, or `nil` for an exact match.
    public var warning: String? { warnings.isEmpty ? nil : warnings.joined(separator: "; ") }

    /// How far apart two positive quantities are, as the absolute log of their ratio.
    package static func distance(_ a: Double, _ b: Double) -> Double {
        guard a > 0, b > 0 else { return .infinity }
        return abs(log(a / b))
    }

    /// The rank of a format among equals: lower is better.
    static func rank(_ fourCC: V4L2FourCC) -> Int {
        switch fourCC {
        case .yuyv: return 1
        case .nv12: return 2
        case .mjpeg: return 3
        case .jpeg: return 4
        default: return 5
        }
    }
}

extension V4L2Device {
    /// Whether Reel can capture `fourCC` when it can decode `decodableFormats`.
    public static func canCapture(_ fourCC: V4L2FourCC, decodableFormats: Set<CompressedVideoFormat>) -> Bool {
        if fourCC.pixelFormat != nil { return true }
        if let compressed = fourCC.compressedFormat { return decodableFormats.contains(compressed) }
        return false
    }

    /// Chooses the mode closest to a request, by the rule described at ``V4L2Negotiation``.
    ///
    /// - Parameters:
    ///   - size: the frame size wanted.
    ///   - frameRate: the frame rate wanted.
    ///   - format: the pixel format wanted, or `nil` to let the rule choose.
    ///   - decodableFormats: the compressed formats a decoder is at hand for.
    /// - Throws: `.unsupportedFormat` when the camera offers nothing Reel can capture.
    public func negotiate(size: PixelSize, frameRate: FrameRate, format: V4L2FourCC? = nil,
                          decodableFormats: Set<CompressedVideoFormat> = [.mjpeg]) throws -> V4L2Negotiation {
        var warnings: [String] = []
        let capturable = formats.filter { Self.canCapture($0.fourCC, decodableFormats: decodableFormats) && !$0.frameSizes.isEmpty }
        guard !capturable.isEmpty else {
            let offered = formats.map(\.fourCC.description).joined(separator: ", ")
            if formats.contains(where: { $0.fourCC.compressedFormat != nil }) {
                throw ReelError(.unsupportedFormat, "\(card) (\(path)) offers only \(offered), and no MJPEG decoder was given",
                                hint: "create the camera with a decoder factory (MJPEGDecoder.factory from ReelFFmpeg)")
            }
            throw ReelError(.unsupportedFormat,
                            "\(card) (\(path)) offers no format Reel can capture (it offers \(offered.isEmpty ? "none" : offered))",
                            hint: "Reel captures YUYV, NV12 and MJPEG cameras")
        }
        var pool = capturable
        if let format {
            let wanted = capturable.filter { $0.fourCC == format }
            if !wanted.isEmpty {
                pool = wanted
            } else if self.format(format) != nil {
                warnings.append("Reel cannot capture \(format) from this camera")
            } else {
                warnings.append("the camera has no \(format) format")
            }
        }

        struct Candidate {
            var fourCC: V4L2FourCC
            var size: PixelSize
            var rate: FrameRate
            var sizeDistance: Double
            var aspectDistance: Double
            var rateDistance: Double
            var rank: Int
        }
        let area = Double(size.width * size.height)
        let aspect = Double(size.width) / Double(max(size.height, 1))
        var candidates: [Candidate] = []
        for f in pool {
            for entry in f.frameSizes {
                let s = entry.closestSize(to: size)
                guard s.width > 0, s.height > 0 else { continue }
                let rate = entry.frameRates.closest(to: frameRate) ?? frameRate
                candidates.append(Candidate(
                    fourCC: f.fourCC, size: s, rate: rate,
                    sizeDistance: V4L2Negotiation.distance(Double(s.width * s.height), area),
                    aspectDistance: V4L2Negotiation.distance(Double(s.width) / Double(s.height), aspect),
                    rateDistance: V4L2Negotiation.distance(rate.framesPerSecond, frameRate.framesPerSecond),
                    rank: f.fourCC == format ? 0 : V4L2Negotiation.rank(f.fourCC)))
            }
        }
        let best = candidates.min { a, b in
            if a.sizeDistance != b.sizeDistance { return a.sizeDistance < b.sizeDistance }
            if a.size.width * a.size.height != b.size.width * b.size.height {
                return a.size.width * a.size.height > b.size.width * b.size.height
            }
            if a.aspectDistance != b.aspectDistance { return a.aspectDistance < b.aspectDistance }
            if a.rateDistance != b.rateDistance { return a.rateDistance < b.rateDistance }
            if a.rate.framesPerSecond != b.rate.framesPerSecond { return a.rate.framesPerSecond > b.rate.framesPerSecond }
            return a.rank < b.rank
        }
        guard let best else {
            throw ReelError(.unsupportedFormat, "\(card) (\(path)) lists no frame sizes for its formats",
                            hint: "check the camera with v4l2-ctl --list-formats-ext")
        }
        if let format, best.fourCC != format { warnings[warnings.count - 1] += "; using \(best.fourCC)" }
        if best.size != size { warnings.append("the camera has no \(size) frames; the closest is \(best.size)") }
        if best.rate != frameRate && abs(best.rate.framesPerSecond - frameRate.framesPerSecond) > 0.0005 {
            warnings.append("\(V4L2FrameRates.format(frameRate)) fps is not offered for \(best.fourCC) \(best.size); using \(V4L2FrameRates.format(best.rate)) fps")
        }
        return V4L2Negotiation(requestedSize: size, requestedFrameRate: frameRate, requestedFormat: format,
                               chosen: V4L2Mode(fourCC: best.fourCC, size: best.size, frameRate: best.rate),
                               warnings: warnings)
    }
}
