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

extension RGBColor {
    /// The mean colour of the square of `radius` around (`x`, `y`) in packed RGB24 pixels
    /// `width` wide (what ``MediaProbe/decodeRGB(_:width:height:start:maxFrames:)`` gives).
    public static func average(of rgb: [UInt8], width: Int, x: Int, y: Int, radius: Int = 2) -> RGBColor {
        var sum = (0, 0, 0), n = 0
        for dy in -radius...radius {
            for dx in -radius...radius {
                let i = ((y + dy) * width + (x + dx)) * 3
                sum.0 += Int(rgb[i]); sum.1 += Int(rgb[i + 1]); sum.2 += Int(rgb[i + 2]); n += 1
            }
        }
        return RGBColor(red: UInt8(sum.0 / n), green: UInt8(sum.1 / n), blue: UInt8(sum.2 / n))
    }

    /// The name of the colour in `palette` within `tolerance` of this one (by the largest
    /// channel difference), else a description of it.
    public func name(in palette: KeyValuePairs<String, RGBColor>, tolerance: Int = 60) -> String {
        for (name, colour) in palette where distance(to: colour) <= tolerance { return name }
        return "other \(self)"
    }

    /// Pure red, green, blue and black, for telling test cameras apart.
    public static let primaries: KeyValuePairs<String, RGBColor> = [
        "red": RGBColor(red: 255, green: 0, blue: 0), "green": RGBColor(red: 0, green: 255, blue: 0),
        "blue": RGBColor(red: 0, green: 0, blue: 255), "black": RGBColor(red: 0, green: 0, blue: 0),
    ]
}
