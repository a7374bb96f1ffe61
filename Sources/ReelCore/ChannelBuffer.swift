/// What a channel counts of one element: its cost against the bound (1, or its bytes), and,
/// for a channel that drops whole groups, whether it starts a group (a video keyframe) and
/// whether it is one of a group's members (a video frame; audio rides along uncounted).
package struct ChannelWeight: Sendable, Hashable {
    /// What the element costs against the bound: 1 in a channel bounded in items, its bytes in
    /// one bounded in bytes.
    package var cost: Int64
    /// Whether a consumer can start at this element (a keyframe; anything, where there are no groups).
    package var startsGroup: Bool
    /// Whether the element is a member of a group, counted in ``ChannelDrops/members`` and
    /// ``ChannelDrops/groups`` when it is dropped (a video frame, not the audio beside it).
    package var isGroupMember: Bool

    package init(cost: Int64, startsGroup: Bool = true, isGroupMember: Bool = false) {
        self.cost = cost
        self.startsGroup = startsGroup
        self.isGroupMember = isGroupMember
    }

    /// One item, in a channel bounded in items.
    package static let one = ChannelWeight(cost: 1)
}

/// What a channel has dropped so far.
package struct ChannelDrops: Sendable, Hashable {
    /// Elements dropped.
    package var items: Int64 = 0
    /// Their cost (bytes, in a channel bounded in bytes).
    package var cost: Int64 = 0
    /// Group members dropped (video frames).
    package var members: Int64 = 0
    /// Groups dropped, whole or their unsent rest.
    package var groups: Int64 = 0

    package init() {}
}

/// What a channel does with an element that does not fit.
package enum ChannelPolicy: Sendable, Hashable {
    /// The sender waits for room (backpressure: nothing is lost).
    case block
    /// The element is refused; what waits stays.
    case dropNewest
    /// Everything waiting goes, and so does everything after it up to the next element that
    /// starts a group (a decoder needs nothing from before a keyframe): a live stream slower
    /// than its link loses whole groups of pictures, never the encoder held up.
    case dropGroups
}

/// The decisions of the one bounded channel, as a value: what is taken, what is dropped and
/// counted, what a consumer gets next. It never waits and never locks; its owner holds it
/// under a lock (``Channel``, or a type whose lock also guards other state, as a live stream's
/// does) and does the waiting and the I/O outside.
///
/// Elements wait in a ring that grows only when full and keeps its room after, so that a
/// channel in steady use does not allocate (one bounded in items has all its room from the start).
package struct ChannelBuffer<Element> {
    fileprivate struct Entry {
        var element: Element
        var weight: ChannelWeight
    }

    /// The most cost held at once before the policy acts (an element bigger than the bound is
    /// taken when nothing else is held).
    package let bound: Int64
    /// What happens to an element that does not fit.
    package let policy: ChannelPolicy
    /// Whether a taken element's cost stays held until the consumer says it is ``done(_:)``
    /// (a write in progress still takes room), rather than being freed when it is taken.
    package let holdsUntilDone: Bool

    private var slots: [Entry?]
    private var head = 0
    /// Elements waiting.
    package private(set) var count = 0
    /// The cost held: of the elements waiting, and (``holdsUntilDone``) of those taken and not done.
    package private(set) var cost: Int64 = 0
    /// The most cost held at once.
    package private(set) var mostCost: Int64 = 0
    /// Elements taken and not yet done (``holdsUntilDone``).
    package private(set) var inFlight = 0
    /// What was dropped.
    package private(set) var drops = ChannelDrops()
    /// Whether elements are dropped until one that starts a group (``ChannelPolicy/dropGroups``,
    /// or after ``restartAtGroup(latest:)``).
    package private(set) var awaitingGroup = false
    /// Whether the group being dropped has been counted.
    private var groupCounted = false

    /// A buffer of at most `bound` cost, with room for `reserve` elements from the start.
    package init(bound: Int64, policy: ChannelPolicy, holdsUntilDone: Bool = false, reserve: Int = 16) {
        self.bound = max(1, bound)
        self.policy = policy
        self.holdsUntilDone = holdsUntilDone
        slots = Array(repeating: nil, count: max(1, reserve))
    }

    /// Whether nothing waits.
    package var isEmpty: Bool { count == 0 }
    /// Whether nothing waits and nothing taken is still being worked on.
    package var isIdle: Bool { count == 0 && inFlight == 0 }

    /// Whether an element of `cost` fits now: when the cost held stays within the bound, or
    /// when nothing is held at all.
    package func hasRoom(for cost: Int64) -> Bool { isIdle || self.cost + cost <= bound }

    /// Takes `element` or drops it (and, under ``ChannelPolicy/dropGroups``, what waits) as
    /// the policy says. Under ``ChannelPolicy/block`` the element is always taken: the owner
    /// waits for ``hasRoom(for:)`` first. Returns whether `element` was taken.
    @discardableResult
    package mutating func offer(_ element: Element, weight: ChannelWeight) -> Bool {
        switch policy {
        case .block:
            break
        case .dropNewest:
            guard hasRoom(for: weight.cost) else {
                countDropped(weight)
                return false
            }
        case .dropGroups:
            if awaitingGroup {
                guard weight.startsGroup else {
                    countDropped(weight)
                    return false
                }
                awaitingGroup = false
            }
            if !isEmpty && !hasRoom(for: weight.cost) {
                dropAll()
                if !weight.startsGroup {
                    awaitingGroup = true
                    countDropped(weight)
                    return false
                }
            }
        }
        append(Entry(element: element, weight: weight))
        return true
    }

    /// The oldest element waiting, and its weight; `nil` when nothing waits.
    package mutating func take() -> (element: Element, weight: ChannelWeight)? {
        guard let entry = removeFirst() else { return nil }
        if holdsUntilDone {
            inFlight += 1
        } else {
            cost -= entry.weight.cost
        }
        return (entry.element, entry.weight)
    }

    /// Frees the room of an element taken (``holdsUntilDone``) once the consumer is done with it.
    package mutating func done(_ weight: ChannelWeight) {
        guard holdsUntilDone, inFlight > 0 else { return }
        inFlight -= 1
        cost -= weight.cost
    }

    /// Makes the consumer start again at an element that starts a group (a new connection):
    /// what waits before the first such element is dropped, and new elements until one comes
    /// if none waits. `latest`: start at the newest one waiting instead, dropping the groups
    /// before it (a connection back after an outage goes on live, not with its backlog).
    package mutating func restartAtGroup(latest: Bool = false) {
        groupCounted = false
        if latest, let newest = lastOffset(where: \.startsGroup), newest > 0 {
            for _ in 0..<newest {
                let entry = removeFirst()!
                if entry.weight.startsGroup { groupCounted = false }
                cost -= entry.weight.cost
                countDropped(entry.weight)
            }
            groupCounted = false
        }
        while let first = peekWeight(), !first.startsGroup {
            let entry = removeFirst()!
            cost -= entry.weight.cost
            countDropped(entry.weight)
        }
        if isEmpty { awaitingGroup = true }
    }

    /// Drops (and counts) everything waiting: each group that starts among it, and the rest
    /// of a group whose start was taken already, count as a group each.
    package mutating func dropAll() {
        var groups: Int64 = 0
        if let first = peekWeight(), !first.startsGroup { groups += 1 }
        while let entry = removeFirst() {
            if entry.weight.startsGroup { groups += 1 }
            cost -= entry.weight.cost
            tally(entry.weight)
        }
        drops.groups += groups
        groupCounted = true
    }

    /// Lets go of everything waiting without counting it as dropped (a consumer that failed
    /// for good: nothing it would do counts).
    package mutating func discardAll() {
        while let entry = removeFirst() { cost -= entry.weight.cost }
    }

    /// Counts an element as dropped that was taken and then not used (a stop's time ran out).
    package mutating func countDropped(_ weight: ChannelWeight) {
        tally(weight)
        if weight.isGroupMember && !groupCounted {
            groupCounted = true
            drops.groups += 1
        }
    }

    private mutating func tally(_ weight: ChannelWeight) {
        drops.items += 1
        drops.cost += weight.cost
        if weight.isGroupMember { drops.members += 1 }
    }

    // MARK: The ring

    private func slot(_ offset: Int) -> Int {
        let index = head + offset
        return index >= slots.count ? index - slots.count : index
    }

    private func peekWeight() -> ChannelWeight? { count == 0 ? nil : slots[head]!.weight }

    /// The offset from the oldest of the newest waiting element whose weight passes `test`.
    private func lastOffset(where test: (ChannelWeight) -> Bool) -> Int? {
        var offset = count - 1
        while offset >= 0 {
            if test(slots[slot(offset)]!.weight) { return offset }
            offset -= 1
        }
        return nil
    }

    private mutating func append(_ entry: Entry) {
        if count == slots.count { grow() }
        slots[slot(count)] = entry
        count += 1
        cost += entry.weight.cost
        mostCost = max(mostCost, cost)
    }

    /// Removes the oldest entry, leaving its cost to the caller.
    private mutating func removeFirst() -> Entry? {
        guard count > 0 else { return nil }
        let entry = slots[head]
        slots[head] = nil  // the element's references go now (a frame back to its pool)
        head = slot(1)
        count -= 1
        if count == 0 { head = 0 }
        return entry
    }

    private mutating func grow() {
        var bigger = [Entry?](repeating: nil, count: slots.count * 2)
        for offset in 0..<count { bigger[offset] = slots[slot(offset)] }
        slots = bigger
        head = 0
    }
}

extension ChannelBuffer: Sendable where Element: Sendable {}
extension ChannelBuffer.Entry: Sendable where Element: Sendable {}
