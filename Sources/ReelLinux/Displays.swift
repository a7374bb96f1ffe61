#if canImport(Glibc)
import Glibc
#endif
internal import CXCB
import ReelCore

/// An X11 display and its screens, as `reel devices` lists them.
public struct DisplayInfo: Sendable, Hashable {
    /// The display name, e.g. `:0`.
    public var name: String
    /// The display's screens, in order.
    public var screens: [ScreenInfo]
    /// The index of the screen the display name selects (`:0.1` selects 1).
    public var defaultScreen: Int

    /// Creates a description of a display.
    public init(name: String, screens: [ScreenInfo], defaultScreen: Int = 0) {
        self.name = name
        self.screens = screens
        self.defaultScreen = defaultScreen
    }
}

/// One screen of an X11 display.
public struct ScreenInfo: Sendable, Hashable {
    /// The screen's index within its display.
    public var index: Int
    /// The size of the screen's root window in pixels.
    public var size: PixelSize
    /// The colour depth in bits (24 for ordinary screens).
    public var depth: Int

    /// Creates a description of a screen.
    public init(index: Int, size: PixelSize, depth: Int = 24) {
        self.index = index
        self.size = size
        self.depth = depth
    }
}

extension X11ScreenSource {
    /// Connects to `name` (`nil`: `$DISPLAY`) and describes its screens.
    ///
    /// - Throws: `.sourceUnavailable` when no X server answers there.
    public static func describeDisplay(_ name: String?) throws -> DisplayInfo {
        let connection = try X11Connection(display: name)
        let screens = connection.screens.enumerated().map { index, screen in
            ScreenInfo(index: index,
                       size: PixelSize(width: Int(screen.pointee.width_in_pixels), height: Int(screen.pointee.height_in_pixels)),
                       depth: Int(screen.pointee.root_depth))
        }
        return DisplayInfo(name: connection.display, screens: screens, defaultScreen: connection.defaultScreenIndex)
    }

    /// The local displays that have a socket in `/tmp/.X11-unix` (`X0` is `:0`), in numeric
    /// order. A listed display may belong to a server that has died; connect to be sure.
    package static func availableDisplays() -> [String] {
        availableDisplays(socketDirectory: "/tmp/.X11-unix")
    }

    /// The displays with a socket in `socketDirectory`.
    package static func availableDisplays(socketDirectory: String) -> [String] {
        guard let directory = opendir(socketDirectory) else { return [] }
        defer { closedir(directory) }
        var numbers: [Int] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasPrefix("X"), let number = Int(name.dropFirst()), number >= 0 else { continue }
            numbers.append(number)
        }
        return numbers.sorted().map { ":\($0)" }
    }
}
