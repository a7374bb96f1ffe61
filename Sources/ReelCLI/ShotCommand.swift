import Foundation
import Reel

/// `reel shot`: one picture of the screen, a region, a window or a camera, as a PNG or a JPEG.
struct ShotCommand {
    let console: Console
    let environment: [String: String]

    /// The options `reel record` selects its picture with, taken as they are.
    static let selection = ["screen", "screen-choose", "region", "window", "window-size", "no-cursor", "camera", "test-pattern", "size"]

    static let specs: [OptionSpec] = RecordOptions.specs.filter { selection.contains($0.name) } + [
        OptionSpec("output", short: "o", value: .required, placeholder: "FILE", completion: .file,
                   help: "the picture: .png (lossless) or .jpg; or a folder for a dated name in it (default: a dated .png in your pictures folder)"),
        OptionSpec("overwrite", help: "replace FILE if it exists"),
        OptionSpec("json", help: "print the result as a JSON line on standard output"),
        OptionSpec("help", short: "h", help: "show this help"),
    ]

    static let help = """
    Usage: reel shot [--screen[=DISPLAY] | --region WxH+X+Y|pick | --window[=ID|NAME|pick] | --camera[=CAMERA]] [-o FILE.png|FILE.jpg]

    Takes one picture of what reel record would record — the screen (the default), a part
    of it, one window or a camera — with the same options, and writes it as a PNG (lossless:
    text stays sharp) or a JPEG. Without -o it goes to your pictures folder (XDG_PICTURES_DIR,
    else ~/Pictures) with a dated name such as "Reel 2026-12-05 at 10.15.00.png". Nothing is
    written over an existing file unless --overwrite is given; the picture takes its name only
    once it is complete.

    """

    func run(_ args: ParsedArguments) async -> Int32 {
        let json = args.has("json")
        do {
            if let extra = args.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
            let (candidates, format) = try destination(args)
            // The picture is chosen as reel record chooses it: the same options, parsed alike.
            var recordArgs: [String] = []
            for name in Self.selection where args.has(name) {
                for value in args.all(name) { recordArgs.append(value.map { "--\(name)=\($0)" } ?? "--\(name)") }
            }
            let options = try RecordOptions(ParsedArguments.parse(recordArgs, specs: RecordOptions.specs))
            guard options.videoSourceCount == 1 else {
                throw UsageError("reel shot takes one picture: give one of --screen, --region, --window, --camera or --test-pattern")
            }
            let sources = try RecordCommand(options: options, console: console, environment: environment).makeSources(still: true)
            guard let source = sources.first(where: { $0.kind == .video }) else { throw UsageError("reel shot needs a picture to take") }
            let picture = try await Snapshot.take(of: source, clock: HostClock())
            PickedSelection.say(sources, options: options, console: console, json: json)
            let url = try PictureFile.write(picture, toFirstFreeOf: candidates, format: format, overwrite: args.has("overwrite"))
            if json {
                console.out(ProgressRenderer.json(["event": "saved", "file": url.path, "width": picture.width, "height": picture.height,
                                                   "format": format.rawValue]))
            } else {
                console.out("Saved \(Format.path(url)) (\(picture.width)x\(picture.height) \(format.rawValue.uppercased()))")
            }
            return 0
        } catch let error as UsageError {
            console.err("reel: \(error.message)")
            return 2
        } catch {
            let text = CommandLineHints.rephrased(error)
            if json {
                console.out(ProgressRenderer.json(["event": "failed", "code": (error as? ReelError)?.code.rawValue ?? "ioFailure", "message": "\(text)"]))
            }
            console.err("reel: error: \(Format.oneLine("\(text)"))")
            return 1
        }
    }

    /// The names the picture may take, in order, and its format: `-o FILE`, or dated names in
    /// `-o FOLDER` or the pictures folder.
    private func destination(_ args: ParsedArguments) throws -> ([URL], PictureFileFormat) {
        var folder = Self.picturesDirectory(environment: environment)
        if let path = args.value("output") ?? nil {
            guard !path.isEmpty else { throw UsageError("-o needs a file name or a folder") }
            switch try OutputLocation.checkOutputPath(path, option: "-o", wanted: "a picture (.png, .jpg) or a folder", allowsFolder: true) {
            case .folder:
                folder = URL(fileURLWithPath: path, isDirectory: true)
            case .missingFolder:
                throw UsageError("-o \(path): there is no such folder (create it, or give a file name)")
            case .file, .special:
                let url = URL(fileURLWithPath: path)
                guard let format = PictureFileFormat(pathExtension: url.pathExtension) else {
                    throw UsageError("-o \(path): a picture is a .png or a .jpg file")
                }
                return ([url], format)
            }
        } else {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        let name = Recorder.datedFileName(container: .mp4).dropLast(4)
        return (Recorder.numberedNames(in: folder, stem: String(name), pathExtension: "png"), .png)
    }

    /// The user's pictures folder: `XDG_PICTURES_DIR`, else from `user-dirs.dirs`, else `~/Pictures`.
    static func picturesDirectory(environment: [String: String]) -> URL {
        Recorder.userDirectory("PICTURES", fallback: "Pictures", environment: environment)
    }
}
