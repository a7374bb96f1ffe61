import Foundation
import ReelCore

/// What ffprobe says of a media file.
public struct ProbedFile: Sendable {
    public struct Stream: Sendable {
        public var index: Int
        public var type: String
        public var codec: String
        public var width: Int?
        public var height: Int?
        public var sampleRate: Int?
        public var channels: Int?
        public var duration: Double?
        public var frameCount: Int?
        public var title: String?
        public var frameRate: Double?
        /// The sample entry or FourCC (`avc1`, `hvc1`, `hev1`, `mp4a`), as ffprobe names it.
        public var codecTag: String?
        /// The codec profile (`High`, `Main 10`, `Profile 2`).
        public var profile: String?
        /// The pixel format of video (`yuv420p`, `yuv420p10le`).
        public var pixelFormat: String?
        /// The channel layout of audio (`stereo`), if the file says.
        public var channelLayout: String?
    }
    public var formatName: String
    public var duration: Double
    public var streams: [Stream]

    public var videoStreams: [Stream] { streams.filter { $0.type == "video" } }
    public var audioStreams: [Stream] { streams.filter { $0.type == "audio" } }
}

/// Errors of the probe helpers.
public struct ProbeError: Error, CustomStringConvertible {
    public var description: String
}

/// ffprobe/ffmpeg helpers that check what Reel wrote: stream facts, decoded frames (luma) and
/// decoded audio.
public enum MediaProbe {
    /// Runs ffprobe on `url`.
    public static func probe(_ url: URL) throws -> ProbedFile {
        let result = try Subprocess.run(["ffprobe", "-v", "error", "-print_format", "json", "-show_format", "-show_streams",
                                         "-count_packets", url.path])
        guard result.status == 0 else { throw ProbeError(description: "ffprobe failed on \(url.path): \(result.stderr)") }
        guard let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any],
              let format = json["format"] as? [String: Any] else {
            throw ProbeError(description: "ffprobe gave no format for \(url.path)")
        }
        func double(_ any: Any?) -> Double? { (any as? String).flatMap(Double.init) }
        func int(_ any: Any?) -> Int? { (any as? Int) ?? (any as? String).flatMap { Int($0) } }
        func rate(_ any: Any?) -> Double? {
            guard let s = any as? String else { return nil }
            let parts = s.split(separator: "/")
            guard parts.count == 2, let n = Double(parts[0]), let d = Double(parts[1]), d != 0 else { return nil }
            return n / d
        }
        let streams = (json["streams"] as? [[String: Any]] ?? []).map { s in
            ProbedFile.Stream(index: int(s["index"]) ?? 0, type: s["codec_type"] as? String ?? "",
                              codec: s["codec_name"] as? String ?? "", width: int(s["width"]), height: int(s["height"]),
                              sampleRate: int(s["sample_rate"]), channels: int(s["channels"]), duration: double(s["duration"]),
                              frameCount: int(s["nb_read_packets"]) ?? int(s["nb_frames"]),
                              title: ((s["tags"] as? [String: Any])?["title"] ?? (s["tags"] as? [String: Any])?["handler_name"]) as? String, frameRate: rate(s["avg_frame_rate"]),
                              codecTag: s["codec_tag_string"] as? String, profile: s["profile"] as? String,
                              pixelFormat: s["pix_fmt"] as? String, channelLayout: s["channel_layout"] as? String)
        }
        return ProbedFile(formatName: format["format_name"] as? String ?? "", duration: double(format["duration"]) ?? 0,
                          streams: streams)
    }

    /// One decoded video frame's luma.
    public struct LumaFrame: Sendable {
        public var width: Int
        public var height: Int
        public var pixels: [UInt8]

        /// The test pattern's frame counter, if readable.
        public var counter: Int64? {
            pixels.withUnsafeBytes { TestPattern.readCounter(luma: $0, width: width, height: height, stride: width) }
        }

        /// Whether the frame shows the test pattern's flash.
        public var isFlash: Bool {
            pixels.withUnsafeBytes { TestPattern.isFlash(luma: $0, width: width, height: height, stride: width) }
        }

        /// The mean luma of a rectangle.
        public func meanLuma(in rect: PixelRect) -> Double {
            var sum = 0, n = 0
            for y in rect.y..<(rect.y + rect.height) {
                for x in rect.x..<(rect.x + rect.width) { sum += Int(pixels[y * width + x]); n += 1 }
            }
            return n == 0 ? 0 : Double(sum) / Double(n)
        }
    }

    /// Decodes every frame of the first video stream to 8-bit luma, without duplicating or
    /// dropping any (passthrough timing).
    public static func decodeLuma(_ url: URL, width: Int, height: Int) throws -> [LumaFrame] {
        let result = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-map", "0:v:0", "-fps_mode", "passthrough",
                                         "-f", "rawvideo", "-pix_fmt", "gray", "-"])
        guard result.status == 0 else { throw ProbeError(description: "ffmpeg could not decode \(url.path): \(result.stderr)") }
        let size = width * height
        var frames: [LumaFrame] = []
        var offset = 0
        let bytes = [UInt8](result.stdout)
        while offset + size <= bytes.count {
            frames.append(LumaFrame(width: width, height: height, pixels: Array(bytes[offset..<(offset + size)])))
            offset += size
        }
        return frames
    }

    /// Decodes the frames of the first video stream (all, or the first `maxFrames`, starting
    /// at `start` seconds) to packed RGB24.
    public static func decodeRGB(_ url: URL, width: Int, height: Int, start: Double? = nil, maxFrames: Int? = nil) throws -> [[UInt8]] {
        var args = ["ffmpeg", "-v", "error"]
        if let start { args += ["-ss", String(start)] }
        args += ["-i", url.path, "-map", "0:v:0", "-fps_mode", "passthrough"]
        if let maxFrames { args += ["-frames:v", String(maxFrames)] }
        args += ["-f", "rawvideo", "-pix_fmt", "rgb24", "-"]
        let result = try Subprocess.run(args)
        guard result.status == 0 else { throw ProbeError(description: "ffmpeg could not decode \(url.path): \(result.stderr)") }
        let size = width * height * 3
        let bytes = [UInt8](result.stdout)
        return stride(from: 0, to: bytes.count - size + 1, by: size).map { Array(bytes[$0..<($0 + size)]) }
    }

    /// The presentation times (seconds) of the packets of stream `stream` (an ffprobe stream
    /// specifier such as `v:0`), in presentation order.
    public static func packetTimes(_ url: URL, stream: String = "v:0") throws -> [Double] {
        let result = try Subprocess.run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries", "packet=pts_time",
                                         "-of", "csv=p=0", url.path])
        guard result.status == 0 else { throw ProbeError(description: "ffprobe failed: \(result.stderr)") }
        return result.output.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.sorted()
    }

    /// The presentation time of each decoded frame of stream `stream` (`v:0`), in the order a
    /// decoder gives them (the order ``decodeLuma(_:width:height:)`` gives them in).
    public static func frameTimes(_ url: URL, stream: String = "v:0") throws -> [Double] {
        let result = try Subprocess.run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries",
                                         "frame=best_effort_timestamp_time", "-of", "csv=p=0", url.path])
        guard result.status == 0 else { throw ProbeError(description: "ffprobe failed: \(result.stderr)") }
        return result.output.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: ","))) }
    }

    /// Where each packet of stream `stream` (an ffprobe stream specifier such as `v:0`) lies in
    /// the file, as ffprobe reads it from the index or the fragment headers, in file order.
    public static func packetExtents(_ url: URL, stream: String = "v:0") throws -> [(pos: Int64, size: Int64)] {
        let r = try Subprocess.run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries", "packet=pos,size",
                                    "-of", "csv=p=0", url.path])
        return r.output.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count == 2, let size = Int64(fields[0]), let pos = Int64(fields[1]) else { return nil }
            return (pos, size)
        }.sorted { $0.pos < $1.pos }
    }

    /// The video frames of a recording cut short whose bytes are all in the file, those of a
    /// fragment the cut tore included, as its fragment headers list them. ffprobe reports a
    /// frame cut short with the size it read, which ends at the end of the file: so a frame
    /// that ends exactly there is not counted (whole or not, it cannot be told here).
    public static func videoPacketsEndingBeforeTheEnd(_ url: URL) throws -> Int {
        let size = Int64((try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value ?? 0)
        return try packetExtents(url).filter { $0.pos + $0.size < size }.count
    }

    /// A digest of the packets of stream `stream` (an ffprobe stream specifier such as `v:0`):
    /// equal for streams encoded alike, whatever the container's own bytes (Matroska's random
    /// segment ID, dates).
    public static func packetDigest(_ url: URL, stream: String = "v:0") throws -> String {
        let result = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-map", "0:\(stream)", "-c", "copy", "-f", "md5", "-"])
        guard result.status == 0 else { throw ProbeError(description: "ffmpeg could not read \(url.path): \(result.stderr)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Decodes audio stream `track` to mono float samples at `sampleRate`. `onTimeline`: the
    /// first sample is the file's time zero (silence before the stream's first sound, or what
    /// lies before zero cut), so that sample `n` is at `n / sampleRate` seconds, as a player
    /// plays it beside the picture; otherwise the samples begin with the first one decoded.
    public static func decodeAudio(_ url: URL, track: Int = 0, sampleRate: Int = 48_000, onTimeline: Bool = false) throws -> [Float] {
        let timeline = onTimeline ? ["-af", "aresample=async=1:first_pts=0"] : []
        let result = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-map", "0:a:\(track)", "-ac", "1"] + timeline
                                        + ["-ar", String(sampleRate), "-f", "f32le", "-"])
        guard result.status == 0 else { throw ProbeError(description: "ffmpeg could not decode audio of \(url.path): \(result.stderr)") }
        return result.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// The start times (seconds) of the beeps in decoded audio: where the energy at
    /// `frequency` rises above half its peak, measured in 5 ms windows.
    public static func beepOnsets(_ samples: [Float], sampleRate: Int = 48_000, frequency: Double = 1000) -> [Double] {
        let window = sampleRate / 200
        var powers: [Double] = []
        var start = 0
        while start + window <= samples.count {
            powers.append(ToneAnalysis.power(of: Array(samples[start..<(start + window)]), sampleRate: sampleRate, frequency: frequency))
            start += window
        }
        guard let peak = powers.max(), peak > 0 else { return [] }
        var onsets: [Double] = []
        var inBeep = false
        for (i, p) in powers.enumerated() {
            if !inBeep && p > peak / 4 {
                inBeep = true
                // Refine within the window: first sample whose magnitude exceeds the tone floor.
                onsets.append(Double(i * window) / Double(sampleRate))
            } else if inBeep && p < peak / 16 {
                inBeep = false
            }
        }
        return onsets
    }
}

extension MediaProbe {
    /// The chapters ffprobe lists in `url`: start (seconds) and title, in order.
    public static func chapters(_ url: URL) throws -> [(start: Double, title: String)] {
        let result = try Subprocess.run(["ffprobe", "-v", "error", "-print_format", "json", "-show_chapters", url.path])
        guard result.status == 0 else { throw ProbeError(description: "ffprobe failed on \(url.path): \(result.stderr)") }
        guard let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] else {
            throw ProbeError(description: "ffprobe gave no chapters for \(url.path)")
        }
        return (json["chapters"] as? [[String: Any]] ?? []).map { chapter in
            let start = (chapter["start_time"] as? String).flatMap(Double.init) ?? -1
            let title = (chapter["tags"] as? [String: Any])?["title"] as? String ?? ""
            return (start, title)
        }
    }
}
