import ReelCore

/// What a real camera answered, read from the text of `v4l2-ctl --all` followed by
/// `v4l2-ctl --list-formats-ext`, so that anyone can record their camera and replay it in
/// tests (``V4L2ReplayDriver``):
///
/// ```
/// (v4l2-ctl -d /dev/video0 --all; v4l2-ctl -d /dev/video0 --list-formats-ext) > camera.txt
/// ```
///
/// Both the current layout of `v4l2-ctl` (`[0]: 'YUYV' (YUYV 4:2:2)`) and the older one
/// (`Index : 0` / `Pixel Format: 'YUYV'` / `Name : …`) are understood; sections the camera
/// logic does not need (controls, crop, selection) are skipped.
package struct V4L2Recording: Sendable, Hashable {
    /// One format with its sizes.
    package struct Format: Sendable, Hashable {
        package var entry: V4L2FormatEntry
        package var sizes: [Size]
    }
    /// One frame size with its intervals.
    package struct Size: Sendable, Hashable {
        package var size: V4L2FrameSizeEntry
        package var intervals: [V4L2FrameIntervalEntry]
    }

    package var identity: V4L2DeviceIdentity
    package var formats: [Format]
    /// The format the camera was set to (`Format Video Capture`), if recorded.
    package var currentFormat: V4L2PixFormat?
    /// The time per frame it was set to (`Streaming Parameters`), if recorded.
    package var currentInterval: V4L2Fraction?
    /// Whether the frame interval can be set (`Capabilities : timeperframe`).
    package var canSetFrameInterval: Bool

    private enum Section { case other, driverInfo, format, streaming, enumeration }

    /// Parses a recording.
    ///
    /// - Throws: `.invalidConfiguration` when the text lacks the driver information of
    ///   `--all` or the format list of `--list-formats-ext`, or a line there is malformed.
    package init(parsing text: String) throws {
        var driver: String?, card: String?, bus = ""
        var caps: V4L2Capabilities?, deviceCaps: V4L2Capabilities?
        var currentSize: PixelSize?, currentFourCC: V4L2FourCC?, bytesPerLine = 0, sizeImage = 0
        var interval: V4L2Fraction?
        var timePerFrame = false
        var formats: [Format] = []
        var sawEnumeration = false
        var section = Section.other

        func fail(_ line: String, _ why: String) -> ReelError {
            ReelError(.invalidConfiguration, "cannot read the v4l2-ctl recording: \(why) in “\(line)”",
                      hint: "record with: v4l2-ctl -d /dev/videoN --all; v4l2-ctl -d /dev/videoN --list-formats-ext")
        }
        func keyValue(_ line: Substring) -> (String, String)? {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].trimmingSpaces(), line[line.index(after: colon)...].trimmingSpaces())
        }

        for raw in text.split(whereSeparator: \.isNewline) {
            let line = Substring(raw)
            let trimmed = Substring(line.trimmingSpaces())
            if trimmed.isEmpty { continue }
            if let first = line.first, first != " " && first != "\t" {
                // A section header starts at the left margin.
                if trimmed.hasPrefix("Driver Info") { section = .driverInfo }
                else if trimmed.hasPrefix("Format Video Capture") { section = .format }
                else if trimmed.hasPrefix("Streaming Parameters Video Capture") { section = .streaming }
                else if trimmed.hasPrefix("ioctl: VIDIOC_ENUM_FMT") { section = .enumeration; sawEnumeration = true }
                else if !(section == .enumeration && (trimmed.hasPrefix("[") || trimmed.hasPrefix("Index") || trimmed.hasPrefix("Type"))) {
                    section = .other
                }
                if section != .enumeration { continue }
            }
            switch section {
            case .other:
                continue
            case .driverInfo:
                guard let (key, value) = keyValue(trimmed) else { continue }
                switch key {
                case "Driver name": driver = value
                case "Card type": card = value
                case "Bus info": bus = value
                case "Capabilities": caps = Self.hex(value).map(V4L2Capabilities.init(rawValue:))
                case "Device Caps": deviceCaps = Self.hex(value).map(V4L2Capabilities.init(rawValue:))
                default: break
                }
            case .format:
                guard let (key, value) = keyValue(trimmed) else { continue }
                switch key {
                case "Width/Height":
                    let parts = value.split(separator: "/").compactMap { Int($0) }
                    guard parts.count == 2 else { throw fail(String(line), "a size that is not W/H") }
                    currentSize = PixelSize(width: parts[0], height: parts[1])
                case "Pixel Format": currentFourCC = Self.quotedFourCC(value)
                case "Bytes per Line": bytesPerLine = Int(value) ?? 0
                case "Size Image": sizeImage = Int(value) ?? 0
                default: break
                }
            case .streaming:
                guard let (key, value) = keyValue(trimmed) else { continue }
                if key == "Capabilities" { timePerFrame = value.contains("timeperframe") }
                if key == "Frames per second" { interval = Self.intervalFromFPSText(value) }
            case .enumeration:
                if trimmed.hasPrefix("[") {
                    // [0]: 'YUYV' (YUYV 4:2:2)   or   [1]: 'MJPG' (Motion-JPEG, compressed)
                    guard let fourCC = Self.quotedFourCC(trimmed) else { throw fail(String(line), "no pixel format") }
                    var description = ""
                    if let open = trimmed.firstIndex(of: "("), let close = trimmed.lastIndex(of: ")"), open < close {
                        description = String(trimmed[trimmed.index(after: open)..<close])
                    }
                    let flags = description.split(separator: ",").dropFirst().map { $0.trimmingSpaces() }
                    let name = description.split(separator: ",").first.map { $0.trimmingSpaces() } ?? description
                    formats.append(Format(entry: V4L2FormatEntry(fourCC: fourCC, description: name,
                                                                 isCompressed: flags.contains("compressed"),
                                                                 isEmulated: flags.contains("emulated")), sizes: []))
                } else if trimmed.hasPrefix("Pixel Format") {
                    // Older v4l2-ctl: Pixel Format: 'MJPG' (compressed)
                    guard let fourCC = Self.quotedFourCC(trimmed) else { throw fail(String(line), "no pixel format") }
                    formats.append(Format(entry: V4L2FormatEntry(fourCC: fourCC, description: fourCC.description,
                                                                 isCompressed: trimmed.contains("compressed"),
                                                                 isEmulated: trimmed.contains("emulated")), sizes: []))
                } else if trimmed.hasPrefix("Name"), let (_, value) = keyValue(trimmed), !formats.isEmpty {
                    formats[formats.count - 1].entry.description = value
                } else if trimmed.hasPrefix("Size:") {
                    guard !formats.isEmpty, let size = Self.frameSize(String(trimmed.dropFirst(5))) else {
                        throw fail(String(line), "a frame size that is not understood")
                    }
                    formats[formats.count - 1].sizes.append(Size(size: size, intervals: []))
                } else if trimmed.hasPrefix("Interval:") {
                    guard !formats.isEmpty, !formats[formats.count - 1].sizes.isEmpty,
                          let entry = Self.frameInterval(String(trimmed.dropFirst(9))) else {
                        throw fail(String(line), "a frame interval that is not understood")
                    }
                    let f = formats.count - 1
                    formats[f].sizes[formats[f].sizes.count - 1].intervals.append(entry)
                }
            }
        }
        guard let driver, let card else {
            throw ReelError(.invalidConfiguration, "the v4l2-ctl recording has no Driver Info (driver name and card type)",
                            hint: "record with: v4l2-ctl -d /dev/videoN --all; v4l2-ctl -d /dev/videoN --list-formats-ext")
        }
        guard sawEnumeration else {
            throw ReelError(.invalidConfiguration, "the v4l2-ctl recording of \(card) has no format list (ioctl: VIDIOC_ENUM_FMT)",
                            hint: "append the output of v4l2-ctl -d /dev/videoN --list-formats-ext")
        }
        let capabilities = caps ?? [.videoCapture, .streaming]
        identity = V4L2DeviceIdentity(driver: driver, card: card, busInfo: bus, capabilities: capabilities,
                                      deviceCapabilities: capabilities.contains(.deviceCapabilities) ? deviceCaps : nil)
        self.formats = formats
        if let currentSize, let currentFourCC {
            currentFormat = V4L2PixFormat(fourCC: currentFourCC, size: currentSize, bytesPerLine: bytesPerLine, sizeImage: sizeImage)
        }
        currentInterval = interval
        canSetFrameInterval = timePerFrame
    }

    private static func hex(_ text: String) -> UInt32? {
        guard text.hasPrefix("0x") else { return nil }
        return UInt32(text.dropFirst(2), radix: 16)
    }

    /// The four characters between the first pair of single quotes.
    private static func quotedFourCC<S: StringProtocol>(_ text: S) -> V4L2FourCC? {
        let parts = text.split(separator: "'", omittingEmptySubsequences: false)
        guard parts.count >= 3 else { return nil }
        return V4L2FourCC(String(parts[1]))
    }

    private static func size(_ text: Substring) -> PixelSize? { PixelSize(parsing: String(text)) }

    /// "Discrete 640x480", "Stepwise 16x16 - 1920x1080 with step 2/2", "Continuous 16x16 - 1920x1080 with step 1/1".
    static func frameSize(_ text: String) -> V4L2FrameSizeEntry? {
        let words = text.split(separator: " ")
        guard let kind = words.first else { return nil }
        if kind == "Discrete", words.count >= 2, let s = size(words[1]) { return .discrete(s) }
        guard kind == "Stepwise" || kind == "Continuous", words.count >= 4,
              let lo = size(words[1]), let hi = size(words[3]) else { return nil }
        var step = PixelSize(width: 1, height: 1)
        if words.count >= 7, words[4] == "with", words[5] == "step" {
            let parts = words[6].split(separator: "/").compactMap { Int($0) }
            if parts.count == 2 { step = PixelSize(width: max(parts[0], 1), height: max(parts[1], 1)) }
        }
        return .stepwise(min: lo, max: hi, step: step)
    }

    /// "Discrete 0.033s (30.000 fps)", "Stepwise 0.033s - 1.000s with step 0.000s (1.000-30.000 fps)".
    /// The seconds are rounded in the text, so the exact interval comes from the fps figures.
    static func frameInterval(_ text: String) -> V4L2FrameIntervalEntry? {
        guard let open = text.lastIndex(of: "("), let close = text.lastIndex(of: ")"), open < close else { return nil }
        let inside = text[text.index(after: open)..<close].replacingOccurrences(of: " fps", with: "")
        let kind = text.split(separator: " ").first
        if kind == "Discrete" {
            return intervalFromFPSText(String(inside)).map { .discrete($0) }
        }
        guard kind == "Stepwise" || kind == "Continuous" else { return nil }
        let parts = inside.split(separator: "-")
        guard parts.count == 2, let slowest = intervalFromFPSText(String(parts[0])),
              let fastest = intervalFromFPSText(String(parts[1])) else { return nil }
        return .stepwise(min: fastest, max: slowest, step: V4L2Fraction(1, 1_000_000))
    }

    /// The interval of "30.000", "7.500", "29.970" fps, or of "30.000 (30/1)" (exact).
    static func intervalFromFPSText(_ text: String) -> V4L2Fraction? {
        if let open = text.firstIndex(of: "("), let close = text.firstIndex(of: ")"), open < close {
            let parts = text[text.index(after: open)..<close].split(separator: "/").compactMap { UInt32($0) }
            if parts.count == 2, parts[0] > 0, parts[1] > 0 { return V4L2Fraction(parts[1], parts[0]) }
        }
        let number = text.split(separator: " ").first.map(String.init) ?? text
        guard let fps = Double(number), fps > 0, fps < 1_000_000 else { return nil }
        let milli = Int64((fps * 1000).rounded())
        if milli % 1000 == 0 { return V4L2Fraction(1, UInt32(milli / 1000)) }
        // NTSC-style rates: n*1000/1001 fps.
        let ntsc = (Double(milli) * 1001 / 1_000_000).rounded()
        if ntsc > 0, abs(Double(milli) * 1001 - ntsc * 1_000_000) <= 1001 { return V4L2Fraction(1001, UInt32(ntsc) * 1000) }
        var a = Int64(1000), b = milli
        var x = a, y = b
        while y != 0 { (x, y) = (y, x % y) }
        a /= x; b /= x
        return V4L2Fraction(UInt32(a), UInt32(b))
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        let start = firstIndex { $0 != " " && $0 != "\t" } ?? endIndex
        let end = lastIndex { $0 != " " && $0 != "\t" }.map { index(after: $0) } ?? start
        return start < end ? String(self[start..<end]) : ""
    }
}
