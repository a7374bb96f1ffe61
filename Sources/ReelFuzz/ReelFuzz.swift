import Foundation
import ReelFFmpeg

// The fuzz target: every reader of media files (recovery, merge probing and copying, remuxing,
// decoding, re-encoding) over one input written to a file. Built for libFuzzer by
// `scripts/fuzz` with `-sanitize=fuzzer,address -DREEL_FUZZ`; without REEL_FUZZ (a plain
// `swift build`) it is a replayer: `ReelFuzz FILE…` runs the same readers over each file and
// prints what each made of it.

/// A folder for the inputs and what the readers write, in memory when there is /dev/shm.
private let scratch: URL = {
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    ReaderExercise.silenceLogging()
    let url = URL(fileURLWithPath: base).appendingPathComponent("reel-fuzz-\(getpid())")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}()

/// Runs the readers over `url`; an error that is not a `ReelError` is a bug, so it stops the run.
private func exercise(_ url: URL, verbose: Bool) {
    for (reader, outcome) in ReaderExercise.run(url, scratch: scratch) {
        if verbose { print("\(url.lastPathComponent): \(reader): \(outcome)") }
        if case .unexpected(let text) = outcome {
            fatalError("\(reader) threw an error that is not a ReelError: \(text)")
        }
    }
}

#if REEL_FUZZ
/// libFuzzer's driver (the entry point for programs that have a `main` of their own, as every
/// SwiftPM executable has): parses the flags and calls `test` with each input.
@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>,
                             _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                             _ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// One input: written to a file, read by every reader. (libFuzzer's own `main`, which the
/// linker may pick instead of ours, calls it by this name.)
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = scratch.appendingPathComponent("input.mp4")
    let bytes = data.map { Data(bytes: $0, count: size) } ?? Data()
    guard FileManager.default.createFile(atPath: input.path, contents: bytes) else {
        fatalError("cannot write \(input.path)")
    }
    exercise(input, verbose: false)
    return 0
}

@main enum ReelFuzz {
    static func main() {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        atexit { try? FileManager.default.removeItem(at: scratch) }
        exit(runFuzzerDriver(&argc, &argv) { data, size in fuzzOne(data, size) })
    }
}
#else
@main enum ReelFuzz {
    static func main() {
        let files = CommandLine.arguments.dropFirst()
        guard !files.isEmpty else {
            print("usage: ReelFuzz FILE… (runs the fuzz target's readers over each file; scripts/fuzz fuzzes)")
            exit(2)
        }
        for path in files { exercise(URL(fileURLWithPath: path), verbose: true) }
        try? FileManager.default.removeItem(at: scratch)
    }
}
#endif
