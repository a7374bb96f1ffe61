import Foundation
import Reel

/// The options of `reel record`, parsed and checked.
public struct RecordOptions: Sendable {
    /// `--screen[=DISPLAY|wayland]`: `nil` when not asked for, `.some(nil)` for the session's screen.
    public var screen: String??
    /// `--screen-choose`: on Wayland, ask the portal's dialog again.
    public var choosesScreen = false
    /// No source was given, so ``screen`` is the session's screen, as a plain `--screen`.
    public var recordsSessionScreen = false
    public var region: PixelRect?
    /// `--region pick`: the region is dragged with the mouse when the screen is opened (X11).
    public var picksRegion = false
    /// `--window[=ID|NAME|pick]`: `nil` when not asked for (a window of the display `screen` names).
    public var window: X11WindowSelector?
    /// `--window-size fit|fill`.
    public var windowResize = WindowResizeMode.fit
    public var drawsCursor = true
    /// `--mic[=SOURCE]`.
    public var microphone: String??
    /// `--app-audio[=SINK]` (the last value), also set (to `nil`) by `--app-audio-except`.
    public var appAudio: String??
    /// Every `--app-audio=APP` value: the applications whose sound is recorded (or, when only
    /// one is given and it names a sink, that sink).
    public var appAudioApplications: [String] = []
    /// `--app-audio-except=APP` values: every application's sound but theirs is recorded.
    public var appAudioExcept: [String] = []
    public var testPattern = false
    public var tone = false
    public var size: PixelSize?
    /// `--size` as given, when it was odd and ``size`` is it made even (said once, at the start).
    var sizeAsGiven: PixelSize?
    public var frameRate = FrameRate(30)
    public var video = VideoSettings()
    public var audio = AudioSettings()
    public var mixesAudio = false
    /// Whether an H.264 encoder that falls behind steps to a faster preset (`--no-adapt`: no).
    public var adaptsEncoderSpeed = true
    public var duration: MediaTime?
    public var maxDuration: MediaTime?
    public var container: Container = .mp4
    public var output: URL?
    /// `-o DIR` with an existing folder (or a path ending in `/`): a dated file in it.
    public var outputFolder: URL?
    public var overwrite = false
    public var json = false
    /// `--control[=PATH]`: the control socket's path (`.some(nil)`: the default one).
    public var control: URL??
    /// `--delay`, `--start-at`, `--stop-at`: when recording begins and ends (see `RecordSchedule`).
    public var schedule = RecordSchedule()
    public var pauseMode: Recorder.PauseMode = .singleFile
    /// `--faster-than-real-time`: synthetic sources on a virtual clock (benchmarks, soak tests).
    public var virtualClock = false
    /// `--max-size`: stop cleanly at this many bytes.
    public var maxFileSize: Int64?
    /// `--min-free`: stop cleanly when the disk has less free space (bytes; 0 turns the guard off).
    public var minimumFreeSpace: Int64 = 100_000_000
    /// `--write-buffer`: the most bytes of the file waiting for the disk (0: written on the
    /// encoding thread).
    public var writeBufferSize: Int64 = 64 << 20
    /// `--keep-clips DIR`: record clips into DIR and keep them after merging.
    public var keepClips: URL?
    /// `--camera[=CAMERA]`, in the order given.
    public var cameras: [CameraLocation] = []
    /// `--layout`, `--pip-corner`, `--pip-size`: how several video sources are composed.
    public var layout: CompositionLayout = .pictureInPicture()
    /// `--each-source DIR`: each video source also recorded on its own into DIR.
    public var eachSource: URL?
    /// `--frame-log FILE`: a CSV row per video frame of every source.
    public var frameLog: URL?
    /// `--zoom FACTOR[:RATE]`: the cameras' digital zoom, set at once or ramped at RATE.
    public var zoom: (factor: Double, rate: Double?)?
    /// `--filter [N:]FILTER`: a look or libavfilter graph for the recorded picture, or (with
    /// `N:`) for the Nth video source (the screen, then the cameras in order, then the test
    /// pattern).
    public var filters: [(source: Int?, filter: VideoFilter)] = []
    /// `--audio-offset`, `--audio-filter`, `--denoise`: each audio source's sound moved and filtered.
    public var sound: [AudioTarget: (offset: MediaTime, filters: [AudioFilter])] = [:]
    /// `--show-clicks`, `--show-keys`, `--highlight-cursor`, `--follow-cursor`: drawn on the screen.
    public var presenter = PresenterOverlays()
    /// `--preview[=auto]`: show what is recorded in a window; with `auto`, only where a
    /// display is.
    public var preview: PreviewMode?

    /// `reel preview`: the window opens with nothing recorded; `r` (or its record button)
    /// starts and pauses recording into clips.
    public var startsPaused = false

    /// Whether `--preview` must open its window.
    public enum PreviewMode: String, Sendable {
        /// `--preview`: no display is an error.
        case on
        /// `--preview=auto`: no display, no window (and a note).
        case auto
    }
    /// `--replay TIME`: keep the last TIME in a replay buffer (1 s to 1 hour); with no `-o`,
    /// nothing is written until a save is asked for.
    public var replay: MediaTime?
    /// `--replay-max-size SIZE`: the most bytes the replay buffer holds.
    public var replayMaxSize: Int64?
    /// `--replay-dir DIR`: where saved replays go (default: the videos folder).
    public var replayDirectory: URL?
    /// `--replay-save-on-exit`: save the buffer once more when the recording stops.
    public var replaySavesOnExit = false
    /// `--replay-spill`: keep the buffer's bytes on the replay folder's disk, not in memory.
    public var replaySpills = false
    /// `--stream URL` (repeatable), as typed, with `--stream-key-file`'s key added: live
    /// streams sent from the recording's encode (see `RecordOptions+Stream.swift`). They hold
    /// keys: show `LiveStream.redacted(_:)` of them, never the address.
    public var streams: [String] = []
    /// SRT's stream ID and passphrase from `--stream-key-file`, for the one `--stream`: never
    /// part of its address, so never shown.
    public var srtSecrets: LiveStream.SRTSecrets?
    /// `--hls DIR` with `--hls-window` and `--hls-segments`: HLS written into DIR.
    public var hls: HLSOutput?

    /// The longest replay buffer the CLI keeps: an hour (of 1080p at a usual bit rate, a few GB
    /// of memory).
    public static let longestReplay = MediaTime(value: 3600, timescale: 1)

    /// How many video sources the options ask for.
    public var videoSourceCount: Int { (screen != nil ? 1 : 0) + cameras.count + (testPattern ? 1 : 0) }
    /// How many audio sources the options ask for (`--app-audio`, however many applications it
    /// names, is one).
    public var audioSourceCount: Int { [microphone != nil, appAudio != nil, tone].filter { $0 }.count }

    /// Builds options from parsed arguments, checking every value.
    public init(_ args: ParsedArguments) throws {
        if let extra = args.positionals.first {
            // `--camera /dev/video0`: an option whose value is optional takes it only with '='.
            if let bare = Self.specs.first(where: { spec in
                if case .optional = spec.value { return args.all(spec.name).contains { $0 == nil } }
                return false
            }) {
                throw UsageError("unexpected argument '\(extra)': --\(bare.name) takes its value with '=' (--\(bare.name)=\(extra)); the output file goes after -o")
            }
            throw UsageError("unexpected argument '\(extra)' (the output file goes after -o)")
        }
        screen = args.value("screen")
        if let text = args.value("region") ?? nil {
            if text == "pick" {
                picksRegion = true
            } else {
                guard let rect = PixelRect(geometry: text) else {
                    throw UsageError("--region needs WIDTHxHEIGHT+X+Y, e.g. 1280x720+0+0, or pick (drag it with the mouse), not '\(text)'")
                }
                guard rect.width >= 16, rect.height >= 16 else { throw UsageError("--region \(text) is too small (at least 16x16)") }
                region = rect
            }
            if screen == nil { screen = .some(nil) }
        }
        choosesScreen = args.has("screen-choose")
        if choosesScreen && screen == nil { screen = .some(nil) }
        try parseWindow(args)
        drawsCursor = !args.has("no-cursor")
        microphone = args.value("mic")
        try parseApplicationAudio(args)
        testPattern = args.has("test-pattern")
        tone = args.has("tone")
        mixesAudio = args.has("mix-audio")
        adaptsEncoderSpeed = !args.has("no-adapt")
        overwrite = args.has("overwrite")
        json = args.has("json")
        control = try Self.controlPath(args)
        schedule = try RecordSchedule(args, now: Date())
        for text in args.all("camera") {
            do { cameras.append(try CameraLocation(parsing: text)) } catch let error as ReelError {
                throw UsageError("--camera: \(error.description)")
            }
        }
        // --region alone means a part of the screen; beside another picture without --screen,
        // the screen it adds is not what was asked for (a display missing would be blamed).
        if region != nil || picksRegion, !args.has("screen"), testPattern || !cameras.isEmpty {
            throw UsageError("--region records a part of the screen, and \(testPattern ? "--test-pattern" : "--camera") has none: give --screen as well to record the screen beside it\(testPattern ? ", or --size for the test pattern's size" : "")")
        }
        if screen == nil && !testPattern && cameras.isEmpty && microphone == nil && appAudio == nil && !tone {
            // No source: the session's screen, as a plain --screen (see sessionScreenNote).
            screen = .some(nil)
            recordsSessionScreen = true
        }
        var corner = CompositionLayout.Corner.bottomRight
        var insetSize = 0.25
        if let text = args.value("pip-corner") ?? nil {
            guard let c = CompositionLayout.Corner(rawValue: text.lowercased()) else {
                throw UsageError("--pip-corner must be top-left, top-right, bottom-left or bottom-right, not '\(text)'")
            }
            corner = c
        }
        if let text = args.value("pip-size") ?? nil {
            let percent = text.hasSuffix("%")
            guard let n = ValueParser.decimal(percent ? String(text.dropLast()) : text), n.isFinite else {
                throw UsageError("--pip-size needs a fraction such as 0.25 or a percentage such as 25%, not '\(text)'")
            }
            let fraction = percent ? n / 100 : n
            guard fraction >= 0.05, fraction <= 0.9 else { throw UsageError("--pip-size must be between 0.05 and 0.9 (5% to 90%), not \(text)") }
            insetSize = fraction
        }
        layout = .pictureInPicture(corner: corner, size: insetSize, margin: 16)
        if let text = args.value("layout") ?? nil {
            switch text.lowercased() {
            case "pip", "picture-in-picture": break
            case "side-by-side", "sbs": layout = .sideBySide
            case "grid": layout = .grid
            default: throw UsageError("--layout must be pip, side-by-side or grid, not '\(text)'")
            }
            if layout != .pictureInPicture(corner: corner, size: insetSize, margin: 16) && (args.has("pip-corner") || args.has("pip-size")) {
                throw UsageError("--pip-corner and --pip-size go with --layout pip")
            }
        }
        if let dir = args.value("each-source") ?? nil {
            guard !dir.isEmpty else { throw UsageError("--each-source needs a folder") }
            eachSource = URL(fileURLWithPath: dir, isDirectory: true)
        }
        if let path = args.value("frame-log") ?? nil {
            guard !path.isEmpty else { throw UsageError("--frame-log needs a file name") }
            try OutputLocation.checkOutputPath(path, option: "--frame-log", wanted: "the log a file name", allowsFolder: false)
            frameLog = URL(fileURLWithPath: path)
        }
        if let text = args.value("zoom") ?? nil {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            // One range said in every message: the followed zoom's with --follow-cursor.
            let follows = args.has("follow-cursor")
            let range = follows ? "between \(PresenterOverlays.zoomFactors.lowerBound) and \(Int(PresenterOverlays.zoomFactors.upperBound))"
                : "between 1 and \(Int(ZoomControl.maximumFactor))"
            let negative = parts[0].hasPrefix("-") && ValueParser.decimal(parts[0].dropFirst()) != nil
            guard parts.count <= 2, let factor = negative ? -1 : ValueParser.decimal(parts[0]), factor.isFinite else {
                throw UsageError("--zoom needs a factor such as 2\(follows ? "" : ", or FACTOR:RATE such as 4:1"), not '\(text)'")
            }
            guard follows ? PresenterOverlays.zoomFactors.contains(factor) : factor >= 1 && factor <= ZoomControl.maximumFactor else {
                throw UsageError("--zoom\(follows ? " with --follow-cursor" : "") must be \(range), not \(parts[0])")
            }
            var rate: Double?
            if parts.count == 2 {
                guard let r = ValueParser.decimal(parts[1]), r.isFinite, r > 0, r <= 100 else {
                    throw UsageError("--zoom's rate must be a positive number of doublings per second, not '\(parts[1])'")
                }
                rate = r
            }
            zoom = (factor, rate)
        }
        if let text = args.value("size") ?? nil {
            guard let s = PixelSize(parsing: text) else { throw UsageError("--size needs WIDTHxHEIGHT, e.g. 1280x720, not '\(text)'") }
            let (low, high) = (VideoSettings.minimumSize, VideoSettings.maximumSize)
            guard (low.width...high.width).contains(s.width), (low.height...high.height).contains(s.height) else {
                throw UsageError("--size \(text) is out of range (\(low) to \(high))")
            }
            size = PixelSize(width: s.width & ~1, height: s.height & ~1)
            sizeAsGiven = size == s ? nil : s
        }
        // What the file's kind implies (VP9 for WebM, 15 fps for a GIF), unless given.
        if let implied = Self.impliedContainer(args) {
            video.codec = implied.defaultVideoCodec
            if implied == .gif { frameRate = Self.gifFrameRate }
        }
        if args.has("fps") {
            frameRate = try Self.frameRate(args.value("fps")! ?? "")
        }
        video.frameRate = frameRate
        if let name = args.value("codec") ?? nil {
            guard let codec = VideoCodec(name: name) else {
                throw UsageError("unknown codec '\(name)' (use h264, hevc, vp9 or av1)")
            }
            video.codec = codec
        }
        let codec = video.codec
        if let preset = args.value("preset") ?? nil {
            guard codec.presets.contains(preset) else {
                throw UsageError("unknown preset '\(preset)' for \(codec.rawValue) (use \(codec.presets.listedWithOr))")
            }
            video.preset = preset
        }
        if args.has("crf") && args.has("bitrate") { throw UsageError("give --crf or --bitrate, not both") }
        if args.has("crf") {
            let text = args.value("crf")! ?? ""
            guard let q = Int(text) else { throw UsageError("--crf needs a whole number, not '\(text)'") }
            guard codec.crfRange.contains(q) else {
                throw UsageError("--crf must be between \(codec.crfRange.lowerBound) and \(codec.crfRange.upperBound) for \(codec.rawValue), not \(q)")
            }
            video.rateControl = .crf(q)
        }
        if args.has("bitrate") {
            video.rateControl = .bitRate(try ValueParser.bitRate(args.value("bitrate")!, option: "bitrate", in: VideoSettings.bitRateRange))
        }
        if let mode = args.value("frame-mode") ?? nil {
            guard let frameMode = FrameMode(rawValue: mode) else {
                throw UsageError("--frame-mode is cfr, vfr or content, not '\(mode)'")
            }
            video.frameMode = frameMode
        }
        if args.has("keyframe-interval") {
            video.keyframeInterval = try ValueParser.integer(args.value("keyframe-interval")!, option: "keyframe-interval",
                                                             in: VideoSettings.keyframeIntervalRange)
        }
        if let profile = args.value("profile") ?? nil {
            guard codec.profiles.contains(profile) else {
                throw UsageError("\(codec.rawValue) has no profile '\(profile)' (use \(codec.profiles.listedWithOr))")
            }
            video.profile = profile
        }
        video.size = size
        try parseFile(args)
        if args.has("max-size") {
            let size = try ValueParser.size(args.value("max-size")!, option: "max-size", allowsZero: false)
            // Below this not even the file's header and a first frame fit: the file could not keep the promise.
            guard size >= 64_000 else { throw UsageError("--max-size must be at least 64k (a file's header and first frames), not \(args.value("max-size")! ?? "")") }
            maxFileSize = size
        }
        if args.has("min-free") { minimumFreeSpace = try ValueParser.size(args.value("min-free")!, option: "min-free", allowsZero: true) }
        if args.has("write-buffer") { writeBufferSize = try ValueParser.size(args.value("write-buffer")!, option: "write-buffer", allowsZero: true) }
        if let mode = args.value("pause-mode") ?? nil {
            guard let m = Recorder.PauseMode(rawValue: mode) else { throw UsageError("--pause-mode must be clips or single-file, not '\(mode)'") }
            pauseMode = m
        }
        if let dir = args.value("keep-clips") ?? nil {
            guard !dir.isEmpty else { throw UsageError("--keep-clips needs a folder") }
            if args.has("pause-mode") && pauseMode != .clips { throw UsageError("--keep-clips needs --pause-mode clips") }
            keepClips = URL(fileURLWithPath: dir, isDirectory: true)
            pauseMode = .clips
        }
        virtualClock = args.has("faster-than-real-time")
        let syntheticCameras = cameras.allSatisfy { if case .testPattern = $0 { return true } else { return false } }
        if virtualClock && (screen != nil || microphone != nil || appAudio != nil || !syntheticCameras) {
            throw UsageError("--faster-than-real-time works only with the synthetic --test-pattern, --camera=test and --tone")
        }
        if args.has("duration") {
            duration = MediaTime(seconds: try ValueParser.duration(args.value("duration")!, option: "duration").seconds)
        }
        if args.has("max-duration") {
            maxDuration = MediaTime(seconds: try ValueParser.duration(args.value("max-duration")!, option: "max-duration").seconds)
        }
        // A limit shorter than one picture records nothing ("nothing was recorded" blamed the sources).
        if videoSourceCount > 0, let limit, limit.seconds < frameRate.frameDuration.seconds {
            let option = duration == limit ? "duration" : "max-duration"
            throw UsageError(String(format: "--\(option) %@ is shorter than one picture at %@ fps (%.3f s): nothing would be recorded",
                                    args.value(option)! ?? "", "\(frameRate)", frameRate.frameDuration.seconds))
        }
        if container.isAudioOnly, let given = ["replay", "stream", "hls"].first(where: args.has) {
            throw UsageError("--\(given) works with video files only (.mp4, .mov, .mkv), not a sound-only .\(container.fileExtension)")
        }
        try parseReplay(args)
        try parseStreams(args)
        try parseFilters(args)
        try parseSound(args)
        if let value = args.value("preview") {
            switch value {
            case nil: preview = .on
            case "auto"?: preview = .auto
            case let other?: throw UsageError("--preview takes no value, or =auto, not '\(other)'")
            }
        }
        if args.has("frame-mode"), screen == nil {
            throw UsageError("--frame-mode needs --screen: it chooses which pictures of the screen are recorded")
        }
        if args.has("frame-mode"), window != nil || videoSourceCount != 1 {
            throw UsageError("--frame-mode works for a recording of the screen alone (--screen, or a --region of it), not of a window or a composed picture, which are recorded at a constant rate")
        }
        if video.frameMode != .constant, let filter = filters.first(where: { !$0.filter.worksPictureByPicture })?.filter {
            throw UsageError("--frame-mode \(video.frameMode.rawValue) leaves out pictures that did not change, but through --filter \(filter) every picture "
                             + "is a new one: \(filter.timing.explanation). Use --frame-mode cfr with it, or a filter that makes each picture "
                             + "from that picture alone (hue, eq, crop, boxblur, the looks…)")
        }
        if video.frameMode != .constant, hls?.segments == .fmp4 {
            throw UsageError("--hls-segments fmp4 cannot go with --frame-mode \(video.frameMode.rawValue): fragmented MP4 segments time each picture as one frame, "
                             + "and the pictures of this mode may be seconds apart; use --hls-segments ts (the default) or --frame-mode cfr")
        }
        try parsePresenter(args)
        try Self.refuseOptionsThatDoNothing(args, screen: screen != nil, videoSources: videoSourceCount,
                                            zoomable: !cameras.isEmpty || testPattern || presenter.followsCursor,
                                            audioSources: audioSourceCount)
    }

    /// `--app-audio[=APP|SINK]` (repeatable) and `--app-audio-except=APP` (repeatable).
    private mutating func parseApplicationAudio(_ args: ParsedArguments) throws {
        let given = args.all("app-audio")
        appAudioApplications = given.compactMap { $0 }
        appAudioExcept = args.all("app-audio-except").compactMap { $0 }
        if appAudioApplications.contains("") || appAudioExcept.contains("") {
            throw UsageError("--app-audio= and --app-audio-except= need an application's name, program or process id")
        }
        if !appAudioApplications.isEmpty && appAudioApplications.count != given.count {
            throw UsageError("--app-audio without a value records every application: give it alone, or name applications with each --app-audio=APP")
        }
        if !appAudioExcept.isEmpty && !given.isEmpty {
            throw UsageError("--app-audio and --app-audio-except cannot be combined: --app-audio-except=APP alone records everything but APP")
        }
        appAudio = given.isEmpty ? (appAudioExcept.isEmpty ? nil : .some(nil)) : given.last
    }

    /// `--fps`: a whole or decimal number (`30`, `29.97`) or a fraction (`30000/1001`), 1 to 240,
    /// kept exactly as a reduced fraction.
    static func frameRate(_ text: String) throws -> FrameRate {
        let bad = UsageError("--fps needs a number of frames per second, such as 30, 29.97 or 30000/1001, not '\(text)'")
        var frames: Int64, per: Int64
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        if parts.count == 2 {
            guard let n = Int64(parts[0]), let d = Int64(parts[1]), n > 0, d > 0, n <= 1_000_000, d <= 1_000_000 else { throw bad }
            (frames, per) = (n, d)
        } else if let n = Int64(text) {
            (frames, per) = (n, 1)
        } else if let d = ValueParser.decimal(text), d.isFinite, d > 0, d <= 1000 {
            (frames, per) = (Int64((d * 1000).rounded()), 1000)
        } else {
            throw bad
        }
        let rate = Double(frames) / Double(per)
        guard rate >= 1, rate <= 240 else { throw UsageError("--fps must be between 1 and 240, not \(text)") }
        var (a, b) = (frames, per)
        while b != 0 { (a, b) = (b, a % b) }
        return FrameRate(Int32(frames / a), per: Int32(per / a))
    }

    /// `--window` and `--window-size`: a window of the display `--screen` names.
    private mutating func parseWindow(_ args: ParsedArguments) throws {
        if let text = args.value("window-size") ?? nil {
            guard args.has("window") else { throw UsageError("--window-size does nothing without --window") }
            if text == "follow" {
                throw UsageError("--window-size=follow is not offered: an H.264 track in MP4, MOV or Matroska keeps one picture size, and players show a size change mid-file wrongly or not at all; use fit (the whole window, letterboxed) or fill (the frame filled, the overflow cut off); the recording keeps the window's size at the start")
            }
            guard let mode = WindowResizeMode(rawValue: text) else {
                throw UsageError("--window-size needs fit or fill, not '\(text)'")
            }
            windowResize = mode
        }
        guard args.has("window") else { return }
        if region != nil { throw UsageError("--region and --window cannot go together: --window records the whole window") }
        window = X11WindowSelector(argument: args.value("window") ?? nil)
        if screen == nil { screen = .some(nil) }
    }

    /// Refuses options that would do nothing with the sources given, naming what they need.
    static func refuseOptionsThatDoNothing(_ args: ParsedArguments, screen: Bool, videoSources: Int, zoomable: Bool,
                                           audioSources: Int) throws {
        func refuse(_ options: [String], unless ok: Bool, _ needs: String) throws {
            if !ok, let given = options.first(where: args.has) { throw UsageError("--\(given) does nothing without \(needs)") }
        }
        try refuse(["zoom"], unless: zoomable, "a camera, the test pattern or --follow-cursor (a screen is zoomed by --follow-cursor; --region records part of it)")
        try refuse(["size", "fps", "codec", "preset", "no-adapt", "crf", "bitrate", "keyframe-interval", "profile", "each-source", "frame-log", "filter", "preview"],
                   unless: videoSources > 0, "a video source (--screen, --camera or --test-pattern)")
        try refuse(["no-cursor"], unless: screen, "--screen")
        try refuse(["layout", "pip-corner", "pip-size"], unless: videoSources > 1, "two or more video sources to compose")
        try refuse(["audio-codec", "audio-bitrate"], unless: audioSources > 0, "an audio source (--mic, --app-audio or --tone)")
        try refuse(["mix-audio"], unless: audioSources > 1, "two or more audio sources to mix")
    }

    /// Checks what needs the other options too.
    func validateCombinations() throws {
        if virtualClock && limit == nil { throw UsageError("--faster-than-real-time needs --duration") }
        try refuseOffsetsAsLongAsTheRecording()
        // No file reel writes may be a file it reads, nor two of its outputs one file: with
        // --overwrite the recording would destroy its own input.
        let inputs = cameras.compactMap { location -> URL? in if case .file(let url) = location { url } else { nil } }
        let outputs = [output.map { ("-o", $0) }, frameLog.map { ("--frame-log", $0) }].compactMap { $0 }
        for (option, out) in outputs {
            for input in inputs where RecordingFile.isSameFile(out, input) {
                throw UsageError("\(option) \(out.path) is the file played as a camera (--camera=\(input.path)); write to another file")
            }
        }
        if let output, let frameLog, RecordingFile.isSameFile(output, frameLog) {
            throw UsageError("--frame-log \(frameLog.path) is the recording's own file (-o); give the log another name")
        }
    }

    /// The recording limit: the shorter of `--duration` and `--max-duration`.
    public var limit: MediaTime? {
        switch (duration, maxDuration) {
        case let (d?, m?): return min(d, m)
        case let (d?, nil): return d
        case let (nil, m?): return m
        default: return nil
        }
    }
}
