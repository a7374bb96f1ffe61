import Synchronization

/// A mouse button, as a presenter overlay tells them apart.
public enum MouseButton: Sendable, Hashable {
    /// The primary button.
    case left
    /// The wheel's button.
    case middle
    /// The secondary button.
    case right
    /// Any other button (a mouse's side buttons), by its number.
    case other(Int)

    /// The button X11 numbers `number` (1 left, 2 middle, 3 right); `nil` for the wheel's
    /// steps (4 to 7), which are no presses.
    public init?(x11Number number: Int) {
        switch number {
        case 1: self = .left
        case 2: self = .middle
        case 3: self = .right
        case 4...7: return nil
        default: self = .other(number)
        }
    }
}

/// The modifier keys held while a key was pressed.
public struct KeyModifiers: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    /// Creates a set from its bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Control.
    public static let control = KeyModifiers(rawValue: 1)
    /// Alt (or Meta).
    public static let alt = KeyModifiers(rawValue: 2)
    /// Shift.
    public static let shift = KeyModifiers(rawValue: 4)
    /// Super (the Windows or Command key).
    public static let `super` = KeyModifiers(rawValue: 8)
}

/// One key press: the key's X11 keysym (the symbol on the key at the level the modifiers
/// chose: `0x41` for a shifted `a`, `0xff08` for Backspace) and the modifiers held.
public struct KeyPress: Sendable, Hashable {
    /// The X11 keysym (Latin-1 keysyms are their characters; `0x0100_0000 + U` is Unicode U).
    public var keysym: UInt32
    /// The modifiers held.
    public var modifiers: KeyModifiers

    /// A press of `keysym` with `modifiers` held.
    public init(keysym: UInt32, modifiers: KeyModifiers = []) {
        self.keysym = keysym
        self.modifiers = modifiers
    }

    /// A press of the key that types `character` (a letter, digit or sign).
    public init(_ character: Character, modifiers: KeyModifiers = []) {
        let scalar = character.unicodeScalars.first?.value ?? 0x3F
        self.init(keysym: scalar < 0x100 ? scalar : 0x0100_0000 + scalar, modifiers: modifiers)
    }
}

/// What the pointer and keyboard did, on the session's clock: what presenter overlays draw.
public struct InputEvent: Sendable, Hashable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// The pointer is now at (`x`, `y`), in pixels of the recorded picture.
        case pointerMoved(x: Double, y: Double)
        /// `button` was pressed with the pointer at (`x`, `y`), in pixels of the recorded picture.
        case buttonPressed(MouseButton, x: Double, y: Double)
        /// A key was pressed.
        case keyPressed(KeyPress)
    }

    /// When, on the session's clock (the clock's time, not counted from the session's start).
    public var time: MediaTime
    /// What happened.
    public var kind: Kind

    /// An event of `kind` at `time` on the session's clock.
    public init(time: MediaTime, _ kind: Kind) {
        self.time = time
        self.kind = kind
    }
}

/// Where presenter overlays learn what the pointer and keyboard do: the X11 input extension's
/// raw events on a desktop, a recorded sequence in tests or in an app that replays one.
///
/// A source delivers events in the order they happened, each stamped on the clock it was
/// started with, from a thread of its own. Positions are in pixels of the picture the overlays
/// draw on (relative to a recorded window or region).
public protocol InputEventSource: AnyObject, Sendable {
    /// Starts delivering events to `deliver`, stamped on `clock`. Throws when the events
    /// cannot be had (no input extension, no display).
    func start(clock: any MediaClock, deliver: @escaping @Sendable (InputEvent) -> Void) throws
    /// Stops delivering; `deliver` is not called after it returns.
    func stop()
}

/// A recorded sequence of input events, delivered all at once when started: the overlays then
/// use each at its time. For tests on a manual clock, and for apps that draw events they
/// recorded themselves.
public final class RecordedInputEvents: InputEventSource {
    private let events: [InputEvent]

    /// A source of `events` (their times on the session's clock).
    public init(_ events: [InputEvent]) {
        self.events = events.sorted { $0.time < $1.time }
    }

    /// Delivers every event, in time order, before returning.
    public func start(clock: any MediaClock, deliver: @escaping @Sendable (InputEvent) -> Void) throws {
        for event in events { deliver(event) }
    }

    /// Does nothing: every event was delivered at the start.
    public func stop() {}
}

/// The events of a source, kept for the overlay stages: written by the source's thread, read by
/// the picture source's thread, each reader taking the events up to a picture's time once.
package final class InputEventLog: Sendable {
    private let pending = Mutex<[InputEvent]>([])

    /// An empty log.
    package init() {}

    /// Adds `event` (from the source's thread).
    package func append(_ event: InputEvent) {
        pending.withLock { $0.append(event) }
    }

    /// Takes the events at or before `time`, in time order; later ones stay.
    package func take(through time: MediaTime) -> [InputEvent] {
        pending.withLock { events in
            guard !events.isEmpty else { return [] }
            events.sort { $0.time < $1.time }
            let split = events.firstIndex { $0.time > time } ?? events.count
            defer { events.removeFirst(split) }
            return Array(events[..<split])
        }
    }

    /// Forgets every event.
    package func removeAll() { pending.withLock { $0 = [] } }
}
