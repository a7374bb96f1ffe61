import ReelCore

/// A set of rows of a picture: sorted, disjoint, non-adjacent ranges.
///
/// What a damage-aware capture reads again from the server and what an encoder converts
/// again are whole rows of the captured rectangle, at even boundaries (4:2:0 chroma covers two
/// rows), so damage is kept as rows rather than as rectangles.
package struct RowSet: Sendable, Equatable {
    /// The ranges, in order.
    package private(set) var ranges: [Range<Int>] = []

    /// No rows.
    package init() {}

    /// The rows of `ranges`.
    package init(_ ranges: [Range<Int>]) {
        for range in ranges { insert(range) }
    }

    /// Whether it holds no row.
    package var isEmpty: Bool { ranges.isEmpty }

    /// How many rows it holds.
    package var count: Int { ranges.reduce(0) { $0 + $1.count } }

    /// Adds `range`, merging it with the ranges it overlaps or touches.
    package mutating func insert(_ range: Range<Int>) {
        guard !range.isEmpty else { return }
        var lower = range.lowerBound, upper = range.upperBound
        var kept: [Range<Int>] = []
        kept.reserveCapacity(ranges.count + 1)
        var placed = false
        for r in ranges {
            if r.upperBound < lower {
                kept.append(r)
            } else if r.lowerBound > upper {
                if !placed { kept.append(lower..<upper); placed = true }
                kept.append(r)
            } else {
                lower = min(lower, r.lowerBound)
                upper = max(upper, r.upperBound)
            }
        }
        if !placed { kept.append(lower..<upper) }
        ranges = kept
    }

    /// Adds every row of `other`.
    package mutating func formUnion(_ other: RowSet) {
        for range in other.ranges { insert(range) }
    }

    /// Joins ranges separated by fewer than `gap` rows (one read of a few rows too many costs
    /// less than a second request).
    package func bridged(_ gap: Int) -> RowSet {
        var result: [Range<Int>] = []
        for range in ranges {
            if let last = result.last, range.lowerBound - last.upperBound < gap {
                result[result.count - 1] = last.lowerBound..<range.upperBound
            } else {
                result.append(range)
            }
        }
        var set = RowSet()
        set.ranges = result
        return set
    }

    /// The rows of the captured rectangle `area` that `rect` covers (both on the screen),
    /// counted from the top of `area` and widened to even boundaries; empty when it misses
    /// `area`.
    package static func rows(of rect: PixelRect, in area: PixelRect) -> Range<Int> {
        guard rect.x < area.x + area.width, rect.x + rect.width > area.x else { return 0..<0 }
        let top = max(rect.y - area.y, 0), bottom = min(rect.y + rect.height - area.y, area.height)
        guard top < bottom else { return 0..<0 }
        return (top & ~1)..<min((bottom + 1) & ~1, area.height)
    }
}

/// The damage bookkeeping of a capture into a pool of buffers that come back in any order:
/// for each picture, the rows that changed since the one before; for each buffer, which
/// picture it holds and where a cursor was drawn over it. A buffer coming back is brought up
/// to date by reading only the rows changed since its picture (the "buffer age" of a
/// swap chain), and the encoder converts only the rows changed since the picture it had.
package struct ScreenDamage: Sendable {
    /// The rows of the whole picture.
    let all: Range<Int>
    /// How many pictures back the history reaches; a buffer older than that is read whole.
    static let depth = 32
    /// The newest picture's number (0: none yet).
    private(set) var newest = 0
    /// The rows each recent picture changed, newest last; `nil` for a picture whose changes
    /// are unknown (read whole).
    private var history: [(picture: Int, rows: RowSet?)] = []
    /// What each buffer (by address) holds.
    private var buffers: [Int: (picture: Int, cursor: Range<Int>)] = [:]

    /// Bookkeeping for pictures `height` rows high.
    package init(height: Int) {
        all = 0..<height
    }

    /// Notes a new picture that changed `rows` (`nil`: unknown, everything) and returns its number.
    package mutating func addPicture(changing rows: RowSet?) -> Int {
        newest += 1
        history.append((newest, rows))
        if history.count > Self.depth { history.removeFirst(history.count - Self.depth) }
        return newest
    }

    /// The rows that changed after picture `picture` up to the newest; `nil` when that is
    /// not known (too old, or a picture of unknown changes came since).
    package func changes(since picture: Int) -> RowSet? {
        guard picture > 0, picture <= newest else { return nil }
        if picture == newest { return RowSet() }
        guard let first = history.first, first.picture <= picture + 1 else { return nil }
        var rows = RowSet()
        for entry in history where entry.picture > picture {
            guard let changed = entry.rows else { return nil }
            rows.formUnion(changed)
        }
        return rows
    }

    /// The rows to read into `buffer` to make it hold the newest picture: what changed since
    /// the picture it holds, and where a cursor was drawn into it; all of them for a buffer
    /// not seen before.
    package func rowsToRead(into buffer: UnsafeMutableRawPointer) -> RowSet {
        guard let held = buffers[Int(bitPattern: buffer)], var rows = changes(since: held.picture) else { return RowSet([all]) }
        rows.insert(held.cursor)
        return rows
    }

    /// Notes that `buffer` holds the newest picture, with a cursor drawn over `cursor`.
    package mutating func noteFilled(_ buffer: UnsafeMutableRawPointer, cursor: Range<Int>) {
        buffers[Int(bitPattern: buffer)] = (newest, cursor)
    }

    /// Forgets what `buffer` holds (a read into it failed half way).
    package mutating func forget(_ buffer: UnsafeMutableRawPointer) {
        buffers[Int(bitPattern: buffer)] = nil
    }
}
