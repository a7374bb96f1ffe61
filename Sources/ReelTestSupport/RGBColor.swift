import Foundation
import ReelCore

/// An 8-bit RGB colour for the test servers' pictures.
public struct RGBColor: Sendable, Hashable, CustomStringConvertible {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8

    /// Creates a colour.
    public init(red: UInt8, green: UInt8, blue: UInt8) {
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// The same colour in video YUV (BT.601, limited range).
    public var yuv: YUVColor { YUVColor(red: red, green: green, blue: blue) }

    /// `RRGGBB` in hex.
    public var hex: String { String(format: "%02x%02x%02x", red, green, blue) }

    public var description: String { "#\(hex)" }

    /// How far `other` is, as the largest difference of one channel.
    public func distance(to other: RGBColor) -> Int {
        max(abs(Int(red) - Int(other.red)), abs(Int(green) - Int(other.green)), abs(Int(blue) - Int(other.blue)))
    }
}
