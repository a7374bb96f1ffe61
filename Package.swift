// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Reel",
    products: [
        .library(name: "Reel", targets: ["Reel"]),
        .library(name: "ReelPreview", targets: ["ReelPreview"]),
        .executable(name: "reel", targets: ["reel"]),
    ],
    targets: [
        // C modules: one per system library, shims for macros only.
        .systemLibrary(name: "CFFmpeg", pkgConfig: "libavformat",
                       providers: [.apt(["libavcodec-dev", "libavformat-dev", "libavutil-dev", "libswscale-dev", "libswresample-dev", "libavfilter-dev"])]),
        .systemLibrary(name: "CXCB", pkgConfig: "xcb",
                       providers: [.apt(["libxcb1-dev", "libxcb-shm0-dev", "libxcb-xfixes0-dev", "libxcb-randr0-dev", "libxcb-composite0-dev"])]),
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1",
                       providers: [.apt(["libdbus-1-dev"])]),
        .systemLibrary(name: "CPulse",
                       providers: [.apt(["libpulse-dev"])]),
        // linux/videodev2.h, from the kernel headers every C toolchain has.
        .systemLibrary(name: "CV4L2"),
        // SDL2's pkg-config adds -D_REENTRANT, which SwiftPM refuses with a warning: its headers
        // are found at <SDL2/SDL.h> without it.
        .systemLibrary(name: "CSDL2", providers: [.apt(["libsdl2-dev"])]),
        // What scripts/install and scripts/package stamp into a build (version, commit) with
        // -Xcc -D…; a plain build gets "0.0.0-dev (unknown commit)". Header only, no library.
        .systemLibrary(name: "CReelBuild"),

        // libpipewire's stream set-up, format negotiation and buffers wrapped in a small C API
        // (SPA is static inline functions and macros Swift cannot call). Its include paths are
        // Debian's (pkg-config libpipewire-0.3).
        .target(name: "CPipeWire",
                cSettings: [.unsafeFlags(["-I/usr/include/pipewire-0.3", "-I/usr/include/spa-0.2", "-D_REENTRANT"])],
                linkerSettings: [.linkedLibrary("pipewire-0.3")]),

        // BGRA to 4:2:0 BT.709 for the encoder, built for AVX2, SSE4.1 and the baseline (the
        // loader picks). Optimised in debug builds too: unoptimised it is 12x slower than
        // libswscale, and tests record 1080p in real time.
        .target(name: "CReelConvert", cSettings: [.unsafeFlags(["-O2"])]),

        .target(name: "ReelCore"),
        // The POSIX layer every target shares: the syscall funnel and its one errno mapping,
        // the host clock, no-clobber file placement, locks on recordings in progress.
        .target(name: "ReelSystem", dependencies: ["ReelCore"]),
        .target(name: "ReelFFmpeg", dependencies: ["ReelCore", "ReelSystem", "CFFmpeg", "CReelConvert"]),
        .target(name: "ReelLinux", dependencies: ["ReelCore", "ReelSystem", "CXCB", "CPulse", "CV4L2", "CDBus", "CPipeWire"]),
        .target(name: "Reel", dependencies: ["ReelCore", "ReelSystem", "ReelFFmpeg", "ReelLinux"]),
        // The preview window (SDL2) in a target of its own, so that the capture library pulls
        // no GUI library into servers.
        .target(name: "ReelPreview", dependencies: ["Reel", "CSDL2"]),
        .target(name: "ReelCLI", dependencies: ["Reel", "ReelPreview", "ReelSystem", "CReelBuild"]),
        .executableTarget(name: "reel", dependencies: ["ReelCLI"]),
        // The libFuzzer target over the readers of media files (scripts/fuzz); a plain build
        // makes it a replayer of inputs.
        .executableTarget(name: "ReelFuzz", dependencies: ["ReelFFmpeg"]),
        .target(name: "ReelTestSupport", dependencies: ["Reel", "CXCB", "CPulse"]),

        .testTarget(name: "ReelCoreTests", dependencies: ["ReelCore", "ReelSystem", "ReelTestSupport"]),
        .testTarget(name: "ReelSystemTests", dependencies: ["ReelSystem", "ReelTestSupport"]),
        .testTarget(name: "ReelFFmpegTests", dependencies: ["ReelFFmpeg", "ReelSystem", "ReelTestSupport"]),
        .testTarget(name: "ReelLinuxTests", dependencies: ["ReelLinux", "ReelSystem", "ReelFFmpeg", "ReelTestSupport"]),
        .testTarget(name: "ReelTests", dependencies: ["Reel", "ReelPreview", "ReelTestSupport"]),
        .testTarget(name: "ReelCLITests", dependencies: ["ReelCLI", "reel", "ReelTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
