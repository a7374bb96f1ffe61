import Foundation
internal import CFFmpeg
import ReelCore
import ReelSystem

/// The kind of file a still picture is written as.
public enum PictureFileFormat: String, Sendable, Hashable, CaseIterable {
    /// PNG: lossless, every pixel as it was captured (what a screenshot of text wants).
    case png
    /// JPEG: smaller, lossy (photographs, a camera's picture).
    case jpeg

    /// The kind a file name's extension names (`png`; `jpg`, `jpeg`), if any.
    public init?(pathExtension: String) {
        switch pathExtension.lowercased() {
        case "png": self = .png
        case "jpg", "jpeg": self = .jpeg
        default: return nil
        }
    }

    /// The usual file extension (`png`, `jpg`).
    public var fileExtension: String { self == .png ? "png" : "jpg" }
}

/// Writes still pictures as PNG or JPEG files through libavcodec's encoders: complete under a
/// hidden name first, then given the name (never over a file unless asked).
package enum PictureFile {
    /// Writes `picture` (an RGBA live frame) as `format` under the first of `candidates` that
    /// nothing has (never replacing a file), or, with `overwrite` and one candidate, at it
    /// whatever is there; returns where it went.
    ///
    /// - Throws: `.invalidConfiguration` (a picture not in RGBA), `.fileExists` (every name
    ///   taken), the file system's errors; nothing is left then.
    @discardableResult
    package static func write(_ picture: LiveFrame, toFirstFreeOf candidates: [URL], format: PictureFileFormat, overwrite: Bool) throws -> URL {
        FFmpeg.silenceLibraryLogging()
        guard picture.format == .rgba else {
            throw ReelError(.invalidConfiguration, "a picture is written from RGBA, not \(picture.format.rawValue)")
        }
        guard let first = candidates.first else { throw ReelError(.invalidConfiguration, "no name to give the picture") }
        if !overwrite && candidates.count == 1 && FileManager.default.fileExists(atPath: first.path) {
            throw Syscall.fileError(EEXIST, creating: first, action: "create")
        }
        let bytes = try encode(picture, as: format)
        let temporary = FilePlacement.temporaryURL(beside: first, purpose: "new")
        do {
            // Through the one errno mapping: a missing folder is said as such (Foundation's
            // write gave no errno, and so "Input/output error").
            let failure = FilePlacement.writeSynced(Data(bytes), to: temporary)
            guard failure == 0 else { throw Syscall.fileError(failure, creating: first, action: "write") }
            if overwrite && candidates.count == 1 {
                try FilePlacement.place(temporary, at: first, replacing: true, what: "the picture")
                return first
            }
            return try FilePlacement.placeAtFirstFree(temporary, candidates: candidates, what: "the picture")
        } catch let error as ReelError {
            unlink(temporary.path)
            throw error
        } catch {
            unlink(temporary.path)
            let e = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError).map { Int32($0.code) } ?? EIO
            throw Syscall.fileError(e, creating: first, action: "write")
        }
    }

    /// The encoded file's bytes.
    private static func encode(_ picture: LiveFrame, as format: PictureFileFormat) throws -> [UInt8] {
        let codecID = format == .png ? AV_CODEC_ID_PNG : AV_CODEC_ID_MJPEG
        guard let codec = avcodec_find_encoder(codecID) else {
            throw ReelError(.unsupportedFormat, "this FFmpeg has no \(format.rawValue.uppercased()) encoder")
        }
        var context = avcodec_alloc_context3(codec)
        var frame = av_frame_alloc()
        let packet = try Packet()
        defer {
            avcodec_free_context(&context)
            av_frame_free(&frame)
        }
        guard let context, let frame else { throw ReelError(.encodingFailed, "cannot allocate a picture encoder: out of memory") }
        // Opaque RGB: a screen's pixels carry no alpha (X11's fourth byte is 0: as RGBA every
        // pixel of a screenshot was transparent).
        let pixelFormat = format == .png ? AV_PIX_FMT_RGB24 : AV_PIX_FMT_YUVJ444P
        context.pointee.width = Int32(picture.width)
        context.pointee.height = Int32(picture.height)
        context.pointee.pix_fmt = pixelFormat
        context.pointee.time_base = AVRational(num: 1, den: 25)
        if format == .jpeg {
            // A fixed quality (2: of 1–31, small losses), full-range colour as JPEG files have.
            context.pointee.flags |= AV_CODEC_FLAG_QSCALE
            context.pointee.global_quality = 2 * FF_QP2LAMBDA
            context.pointee.color_range = AVCOL_RANGE_JPEG
        }
        try FFmpeg.check(avcodec_open2(context, codec, nil), "cannot open the \(format.rawValue.uppercased()) encoder")
        frame.pointee.width = context.pointee.width
        frame.pointee.height = context.pointee.height
        frame.pointee.format = pixelFormat.rawValue
        try FFmpeg.check(av_frame_get_buffer(frame, 0), "cannot allocate a picture: out of memory")
        try fill(frame, from: picture, as: pixelFormat)
        try FFmpeg.check(avcodec_send_frame(context, frame), "the \(format.rawValue.uppercased()) encoder refused the picture")
        try FFmpeg.check(avcodec_send_frame(context, nil), "the \(format.rawValue.uppercased()) encoder failed")
        var bytes: [UInt8] = []
        while avcodec_receive_packet(context, packet.pointer) >= 0 {
            if let data = packet.pointer.pointee.data { bytes += UnsafeBufferPointer(start: data, count: Int(packet.pointer.pointee.size)) }
            packet.unref()
        }
        guard !bytes.isEmpty else { throw ReelError(.encodingFailed, "the \(format.rawValue.uppercased()) encoder gave nothing") }
        return bytes
    }

    /// Copies the colours (PNG, without the alpha) or converts (JPEG, by the one owner of libswscale) `picture` into `frame`.
    private static func fill(_ frame: UnsafeMutablePointer<AVFrame>, from picture: LiveFrame, as pixelFormat: AVPixelFormat) throws {
        try picture.withUnsafePlane(0) { bytes, stride in
            guard let source = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
            if pixelFormat == AV_PIX_FMT_RGB24 {
                guard let destination = frame.pointee.data.0 else { return }
                for row in 0..<picture.height {
                    let from = source + row * stride, to = destination + row * Int(frame.pointee.linesize.0)
                    for x in 0..<picture.width {
                        to[3 * x] = from[4 * x]
                        to[3 * x + 1] = from[4 * x + 1]
                        to[3 * x + 2] = from[4 * x + 2]
                    }
                }
                return
            }
            let scaler = Scaler()
            let size = PixelSize(width: picture.width, height: picture.height)
            let shape = Scaler.Shape(sourceSize: size, sourceFormat: AV_PIX_FMT_RGBA.rawValue, destinationSize: size,
                                     destinationFormat: pixelFormat.rawValue, filter: SWS_POINT,
                                     colour: Scaler.Colour(source: SWS_CS_ITU601, sourceFullRange: true, destination: SWS_CS_ITU601, destinationFullRange: true))
            guard scaler.prepare(shape) else { throw ReelError(.encodingFailed, "libswscale cannot convert the picture for JPEG") }
            var sources: [UnsafePointer<UInt8>?] = [UnsafePointer(source), nil, nil, nil]
            var sourceStrides: [Int32] = [Int32(stride), 0, 0, 0]
            var destinations: [UnsafeMutablePointer<UInt8>?] = [frame.pointee.data.0, frame.pointee.data.1, frame.pointee.data.2, nil]
            var destinationStrides: [Int32] = [frame.pointee.linesize.0, frame.pointee.linesize.1, frame.pointee.linesize.2, 0]
            let rows = scaler.scale(&sources, strides: &sourceStrides, rows: Int32(picture.height), into: &destinations, strides: &destinationStrides)
            guard rows > 0 else { throw ReelError(.encodingFailed, "libswscale did not convert the picture for JPEG") }
        }
    }
}
