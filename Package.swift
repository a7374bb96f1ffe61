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
                       providers: [.apt(["libxcb1-dev", "libxcb-shm0-dev", "libxcb-xfixes0-dev", "libxcb-randr0-dev", "libxcb-composite0-dev", "libxcb-xinput-dev"])]),
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

        // libpipewire's include paths and library for CPipeWire, from a pkg-config file of our
        // own (Sources/CLibPipeWire/reel-pipewire.pc) named by its absolute path: SwiftPM reads
        // only -I/-L/-l from a .pc file, and libpipewire-0.3.pc also says -D_REENTRANT (a no-op
        // with glibc), which it drops with a warning in every build of every package that
        // depends on Reel. The paths are those every distribution's libpipewire-0.3.pc gives
        // (under PKG_CONFIG_SYSROOT_DIR when set). SwiftPM splits the name at spaces, so from a
        // folder with a space in its path the system's file is read instead (and warns).
        .systemLibrary(name: "CLibPipeWire",
                       pkgConfig: Context.packageDirectory.contains(" ")
                           ? "libpipewire-0.3" : Context.packageDirectory + "/Sources/CLibPipeWire/reel-pipewire.pc",
                       providers: [.apt(["libpipewire-0.3-dev"])]),
        // libpipewire's stream set-up, format negotiation and buffers wrapped in a small C API
        // (SPA is static inline functions and macros Swift cannot call).
        .target(name: "CPipeWire", dependencies: ["CLibPipeWire"]),

        // BGRA to 4:2:0 BT.709 for the encoder, in vector code, built for AVX2, SSE4.1 and the
        // baseline (the loader picks). No flags: a debug build (-O0) runs it within 3x of -O2.
        .target(name: "CReelConvert"),

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
