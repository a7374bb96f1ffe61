#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
internal import CXCB
import ReelCore
import ReelSystem

/// What the pointer and keyboard do on an X11 display, for the presenter overlays: the X Input
/// extension's raw events (version 2.2), which reach a client whoever has the focus and even
/// while another program grabs the pointer. Presses and key strokes are only passed on, never
/// written anywhere.
///
/// Positions are in pixels of what `source` records: the screen, its region, or its window
/// (asked of the server at each event, so a window that moves is followed). Recording a window,
/// only presses that land on it are passed on: not those on another window covering it.
public final class XInputEventSource: InputEventSource {
    /// The display, or `nil` for `$DISPLAY`.
    public let display: String?
    private let source: (any CaptureSource)?
    private let running = Mutex<Reader?>(nil)

    /// Events of `display` (`nil`: `$DISPLAY`), placed in the pixels of `source` (an
    /// ``X11ScreenSource`` with or without a region, or an ``X11WindowSource``; `nil` or any
    /// other source: the whole screen).
    public init(display: String? = nil, for source: (any CaptureSource)? = nil) {
        self.display = display ?? (source as? X11ScreenSource)?.display ?? (source as? X11WindowSource)?.display
        self.source = source
    }

    /// Connects to the display and starts a thread reading its raw events.
    ///
    /// - Throws: `.sourceUnavailable` when there is no X server, or it lacks the X Input
    ///   extension 2.2.
    public func start(clock: any MediaClock, deliver: @escaping @Sendable (InputEvent) -> Void) throws {
        let connection = try X11Connection(display: display)
        guard let screen = connection.defaultScreen else {
            throw ReelError(.sourceUnavailable, "the X server at display \(connection.display) has no screen")
        }
        let root = screen.pointee.root
        let opcode = try Self.enableRawEvents(connection, root: root)
        var place = Reader.Place.screen(x: 0, y: 0)
        if let window = source as? X11WindowSource, let id = window.windowID {
            place = .window(id)
        } else if let region = (source as? X11ScreenSource)?.region {
            place = .screen(x: region.x, y: region.y)
        }
        let reader = Reader(connection: connection, root: root, opcode: opcode, place: place, clock: clock, deliver: deliver)
        running.withLock { $0 = reader }
        reader.start()
    }

    /// Stops the reading thread and disconnects.
    public func stop() {
        running.withLock { s in defer { s = nil }; return s }?.stop()
    }

    /// Asks for the raw button, key and motion events of every master device on `root`;
    /// returns the extension's major opcode (what its events carry).
    private static func enableRawEvents(_ connection: X11Connection, root: UInt32) throws -> UInt8 {
        let unavailable = ReelError(.sourceUnavailable, "the X server at display \(connection.display) has no X Input extension 2.2, which clicks and keys are read through",
                                    hint: "use an X server with XInput2 (every current Xorg and Xvfb has it)")
        let name = "XInputExtension"
        let query = xcb_query_extension(connection.raw, UInt16(name.utf8.count), name)
        guard let ext = xcb_query_extension_reply(connection.raw, query, nil) else { throw unavailable }
        defer { free(ext) }
        guard ext.pointee.present != 0 else { throw unavailable }
        let cookie = xcb_input_xi_query_version(connection.raw, 2, 2)
        guard let version = xcb_input_xi_query_version_reply(connection.raw, cookie, nil) else { throw unavailable }
        defer { free(version) }
        guard version.pointee.major_version > 2 || (version.pointee.major_version == 2 && version.pointee.minor_version >= 2) else { throw unavailable }
        let mask = UInt32(XCB_INPUT_XI_EVENT_MASK_RAW_KEY_PRESS.rawValue | XCB_INPUT_XI_EVENT_MASK_RAW_KEY_RELEASE.rawValue
                          | XCB_INPUT_XI_EVENT_MASK_RAW_BUTTON_PRESS.rawValue | XCB_INPUT_XI_EVENT_MASK_RAW_MOTION.rawValue)
        // An event mask is its header (device, length in words) followed by the mask words.
        var words: [UInt32] = [UInt32(XCB_INPUT_DEVICE_ALL_MASTER.rawValue) | (1 << 16), mask]
        let failed = words.withUnsafeMutableBytes { bytes -> Bool in
            let head = bytes.baseAddress!.assumingMemoryBound(to: xcb_input_event_mask_t.self)
            let check = xcb_input_xi_select_events_checked(connection.raw, root, 1, head)
            guard let error = xcb_request_check(connection.raw, check) else { return false }
            free(error)
            return true
        }
        guard !failed else { throw unavailable }
        return ext.pointee.major_opcode
    }
}

/// The thread of one run of an ``XInputEventSource``: reads raw events, turns key codes into
/// keysyms with the modifiers held, and asks where the pointer is for presses and motion.
private final class Reader: @unchecked Sendable {
    enum Place {
        /// Root coordinates less this origin.
        case screen(x: Int, y: Int)
        /// Coordinates relative to this window.
        case window(UInt32)
    }

    private let connection: X11Connection
    private let root: UInt32
    private let opcode: UInt8
    private let place: Place
    private let clock: any MediaClock
    private let deliver: @Sendable (InputEvent) -> Void
    private let stopping = Atomic(false)
    private let finished = DispatchSemaphore(value: 0)
    /// The keyboard's keysyms: `perKeycode` for each key code from `firstKeycode`.
    private var keysyms: [UInt32] = []
    private var perKeycode = 0
    private var firstKeycode = 8
    /// The modifier keys held down, by key code.
    private var held: [UInt32: KeyModifiers] = [:]

    init(connection: X11Connection, root: UInt32, opcode: UInt8, place: Place, clock: any MediaClock,
         deliver: @escaping @Sendable (InputEvent) -> Void) {
        self.connection = connection
        self.root = root
        self.opcode = opcode
        self.place = place
        self.clock = clock
        self.deliver = deliver
    }

    func start() {
        readKeyboardMapping()
        let thread = Thread { [self] in run(); finished.signal() }
        thread.name = "reel-xinput"
        thread.start()
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }

    private func run() {
        let fd = xcb_get_file_descriptor(connection.raw)
        var last: (x: Double, y: Double)?
        while !stopping.load(ordering: .relaxed), !connection.hasFailed {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // Woken at least 30 times a second, to see whether to stop and where the pointer
            // is: a pointer moved by a program (warped) makes no raw event.
            guard case .success = Syscall.attempt({ poll(&entry, 1, 33) }) else { return }
            while let event = xcb_poll_for_event(connection.raw) {
                defer { free(event) }
                if event.pointee.response_type & 0x7F == XCB_MAPPING_NOTIFY {
                    // The keyboard's mapping changed (another layout, or a program typing a
                    // character no key has binds it to a spare key for that one key stroke):
                    // read it again at once, before the key strokes that follow.
                    let notify = UnsafeRawPointer(event).assumingMemoryBound(to: xcb_mapping_notify_event_t.self).pointee
                    if notify.request == UInt8(XCB_MAPPING_KEYBOARD.rawValue) { readKeyboardMapping() }
                    continue
                }
                guard event.pointee.response_type & 0x7F == XCB_GE_GENERIC else { continue }
                let raw = UnsafeRawPointer(event).assumingMemoryBound(to: xcb_input_raw_button_press_event_t.self).pointee
                guard raw.extension == opcode else { continue }
                let time = clock.now()
                switch Int32(raw.event_type) {
                case XCB_INPUT_RAW_MOTION:
                    continue  // asked for below, once for all of them
                case XCB_INPUT_RAW_BUTTON_PRESS:
                    guard let button = MouseButton(x11Number: Int(raw.detail)), let at = pointer() else { continue }
                    // A window's recording shows its own clicks, not those of a window over it.
                    guard pointerIsOverRecordedWindow() else { last = at; continue }
                    deliver(InputEvent(time: time, .buttonPressed(button, x: at.x, y: at.y)))
                    last = at
                case XCB_INPUT_RAW_KEY_PRESS:
                    keyPressed(raw.detail, at: time)
                case XCB_INPUT_RAW_KEY_RELEASE:
                    held[raw.detail] = nil
                default:
                    continue
                }
            }
            if let at = pointer(), last?.x != at.x || last?.y != at.y {
                last = at
                deliver(InputEvent(time: clock.now(), .pointerMoved(x: at.x, y: at.y)))
            }
        }
    }

    /// Where the pointer is, in the recorded picture's pixels.
    private func pointer() -> (x: Double, y: Double)? {
        let window: UInt32
        if case .window(let id) = place { window = id } else { window = root }
        let cookie = xcb_query_pointer(connection.raw, window)
        guard let reply = xcb_query_pointer_reply(connection.raw, cookie, nil) else { return nil }
        defer { free(reply) }
        switch place {
        case .window:
            return (Double(reply.pointee.win_x), Double(reply.pointee.win_y))
        case .screen(let x, let y):
            return (Double(Int(reply.pointee.root_x) - x), Double(Int(reply.pointee.root_y) - y))
        }
    }

    /// Whether a press now lands on the recorded window (always, recording the screen or a
    /// region): the top-level window under the pointer is the one that holds it. A press on
    /// another window covering it went to that window, and is not drawn.
    private func pointerIsOverRecordedWindow() -> Bool {
        guard case .window(let id) = place else { return true }
        let cookie = xcb_query_pointer(connection.raw, root)
        guard let reply = xcb_query_pointer_reply(connection.raw, cookie, nil) else { return false }
        let under = reply.pointee.child
        free(reply)
        return under != 0 && under == topLevel(of: id)
    }

    /// The child of the root window that holds `window` (itself, unless a window manager's frame
    /// does); `nil` if it is gone.
    private func topLevel(of window: UInt32) -> UInt32? {
        var current = window
        for _ in 0..<32 {
            let cookie = xcb_query_tree(connection.raw, current)
            guard let reply = xcb_query_tree_reply(connection.raw, cookie, nil) else { return nil }
            let parent = reply.pointee.parent
            free(reply)
            if parent == root || parent == 0 { return current }
            current = parent
        }
        return nil
    }

    private func keyPressed(_ keycode: UInt32, at time: MediaTime) {
        let modifiers = held.values.reduce(KeyModifiers()) { $0.union($1) }
        let level = modifiers.contains(.shift) ? 1 : 0
        var keysym = keysym(keycode, level: level)
        if keysym == 0 { keysym = self.keysym(keycode, level: 0) }
        if let modifier = Self.modifier(of: keysym) {
            held[keycode] = modifier
            return
        }
        guard keysym != 0 else { return }
        deliver(InputEvent(time: time, .keyPressed(KeyPress(keysym: keysym, modifiers: modifiers))))
    }

    private func keysym(_ keycode: UInt32, level: Int) -> UInt32 {
        let index = (Int(keycode) - firstKeycode) * perKeycode + level
        guard perKeycode > level, index >= 0, index < keysyms.count else { return 0 }
        return keysyms[index]
    }

    /// The modifier a modifier key's keysym stands for.
    private static func modifier(of keysym: UInt32) -> KeyModifiers? {
        switch keysym {
        case 0xFFE1, 0xFFE2: return .shift
        case 0xFFE3, 0xFFE4: return .control
        case 0xFFE7, 0xFFE8, 0xFFE9, 0xFFEA: return .alt
        case 0xFFEB, 0xFFEC, 0xFFED, 0xFFEE: return .super
        case 0xFFE5, 0xFE03, 0xFF7E, 0xFF7F: return []  // Caps Lock, AltGr, Mode switch, Num Lock
        default: return nil
        }
    }

    /// The keysyms of every key code: at the start, and again whenever the mapping changes.
    private func readKeyboardMapping() {
        let setup = connection.setup.pointee
        firstKeycode = Int(setup.min_keycode)
        let count = UInt8(Int(setup.max_keycode) - firstKeycode + 1)
        let cookie = xcb_get_keyboard_mapping(connection.raw, setup.min_keycode, count)
        guard let reply = xcb_get_keyboard_mapping_reply(connection.raw, cookie, nil) else { return }
        defer { free(reply) }
        perKeycode = Int(reply.pointee.keysyms_per_keycode)
        let length = Int(xcb_get_keyboard_mapping_keysyms_length(reply))
        guard let first = xcb_get_keyboard_mapping_keysyms(reply) else { return }
        keysyms = Array(UnsafeBufferPointer(start: first, count: length))
    }
}
