/// How a source's pictures are turned before any output sees them, in quarter turns clockwise:
/// what `AVCaptureConnection`'s `videoRotationAngle` (and `videoOrientation`) set. A camera
/// mounted on its side, or upside down, records upright with the turn that undoes it.
public enum VideoOrientation: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// As the source delivers them.
    case upright = 0
    /// A quarter turn clockwise: the picture's left edge becomes its top.
    case clockwise90 = 90
    /// A half turn.
    case upsideDown = 180
    /// A quarter turn counterclockwise (three clockwise): the picture's right edge becomes its top.
    case counterclockwise90 = 270

    /// The clockwise turn in degrees: 0, 90, 180 or 270.
    public var rotationAngle: Int { rawValue }

    /// The orientation that turns by `degrees` clockwise (any multiple of 90, negative ones
    /// counterclockwise); `nil` for an angle that is not a quarter turn.
    public init?(rotationAngle degrees: Int) {
        guard degrees % 90 == 0 else { return nil }
        self.init(rawValue: ((degrees % 360) + 360) % 360)
    }

    /// Whether a picture turned so has its width and height exchanged.
    public var swapsWidthAndHeight: Bool { self == .clockwise90 || self == .counterclockwise90 }

    /// The size of a picture of `size` turned so.
    public func turned(_ size: PixelSize) -> PixelSize {
        swapsWidthAndHeight ? PixelSize(width: size.height, height: size.width) : size
    }

    /// "upright", "90° clockwise", "upside down", "90° counterclockwise".
    public var description: String {
        switch self {
        case .upright: return "upright"
        case .clockwise90: return "90° clockwise"
        case .upsideDown: return "upside down"
        case .counterclockwise90: return "90° counterclockwise"
        }
    }
}
