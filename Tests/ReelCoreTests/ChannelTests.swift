import Foundation
import ReelCore
import Testing

/// The one bounded channel: its decisions as a value (each policy, bounds in items and bytes,
/// what is counted), and the waiting around them (a blocked sender, a waiting consumer, close
/// and cancel, no lost wakeup under many threads). No test sleeps for an outcome: a test waits
/// for a state the channel shows, so the results are the same on a loaded machine.
@Suite struct ChannelTests {
    /// A value shared with the threads a test starts.
    final class Shared<Value>: @unchecked Sendable {
        private let lock = NSLock()
        private var value: Value
        init(_ value: Value) { self.value = value }
        func withLock<R>(_ body: (inout Value) -> R) -> R {
            lock.lock()
            defer { lock.unlock() }
            return body(&value)
        }
    }

    /// A buffer behind a reference, so that `#expect` can call its mutating methods.
    @dynamicMemberLookup final class Held<Element> {
        var buffer: ChannelBuffer<Element>
        init(_ buffer: ChannelBuffer<Element>) { self.buffer = buffer }
        subscript<T>(dynamicMember path: KeyPath<ChannelBuffer<Element>, T>) -> T { buffer[keyPath: path] }
        @discardableResult func offer(_ element: Element, weight: ChannelWeight) -> Bool { buffer.offer(element, weight: weight) }
        func take() -> (element: Element, weight: ChannelWeight)? { buffer.take() }
        func done(_ weight: ChannelWeight) { buffer.done(weight) }
        func restartAtGroup(latest: Bool = false) { buffer.restartAtGroup(latest: latest) }
        func hasRoom(for cost: Int64) -> Bool { buffer.hasRoom(for: cost) }
    }

    /// Polls `condition` (a state another thread reaches) for up to 10 s.
    func waitFor(_ what: String, _ condition: () -> Bool) {
        let deadline = Date(timeIntervalSinceNow: 10)
        while !condition() {
            guard Date() < deadline else { Issue.record("never: \(what)"); return }
            usleep(1000)
        }
    }

    /// A frame of a group (video) or audio, of `bytes`.
    func packet(_ bytes: Int64, key: Bool = false, video: Bool = true) -> ChannelWeight {
        ChannelWeight(cost: bytes, startsGroup: video && key, isGroupMember: video)
    }

    // MARK: The decisions

    @Test func dropNewestRefusesWhatDoesNotFitAndCountsIt() {
        let buffer = Held(ChannelBuffer<Int>(bound: 2, policy: .dropNewest, reserve: 2))
        #expect(buffer.offer(1, weight: .one) && buffer.offer(2, weight: .one))
        #expect(!buffer.offer(3, weight: .one), "full: the newest is refused")
        #expect(buffer.drops.items == 1 && buffer.drops.cost == 1)
        #expect(buffer.take()?.element == 1)
        #expect(buffer.offer(4, weight: .one), "room again once one is taken")
        #expect(buffer.take()?.element == 2 && buffer.take()?.element == 4 && buffer.take() == nil)
        #expect(buffer.mostCost == 2)
    }

    @Test func aByteBoundTakesAnElementBiggerThanItAlone() {
        let buffer = Held(ChannelBuffer<String>(bound: 100, policy: .dropNewest))
        #expect(buffer.offer("big", weight: ChannelWeight(cost: 250)), "nothing held: taken though over the bound")
        #expect(!buffer.offer("small", weight: ChannelWeight(cost: 1)), "nothing more fits beside it")
        _ = buffer.take()
        #expect(buffer.offer("a", weight: ChannelWeight(cost: 60)) && buffer.offer("b", weight: ChannelWeight(cost: 40)))
        #expect(!buffer.offer("c", weight: ChannelWeight(cost: 1)), "exactly full")
        #expect(buffer.cost == 100 && buffer.mostCost == 250 && buffer.drops.cost == 2)
    }

    @Test func heldElementsKeepTheirRoomUntilDone() {
        let buffer = Held(ChannelBuffer<Int>(bound: 10, policy: .block, holdsUntilDone: true))
        buffer.offer(1, weight: ChannelWeight(cost: 6))
        buffer.offer(2, weight: ChannelWeight(cost: 4))
        let taken = buffer.take()!
        #expect(buffer.cost == 10 && !buffer.hasRoom(for: 1), "a write in progress still takes room")
        buffer.done(taken.weight)
        #expect(buffer.cost == 4 && buffer.hasRoom(for: 6) && !buffer.hasRoom(for: 7))
        let last = buffer.take()!
        #expect(!buffer.isIdle, "taken, not done")
        buffer.done(last.weight)
        #expect(buffer.isIdle && buffer.cost == 0)
    }

    /// The stream `K f f a K f a f …` (K a keyframe, f a frame, a audio) through a bound that
    /// holds about one group: whole groups go, the consumer restarts at a keyframe.
    @Test func dropGroupsDropsWhatWaitsAndTheRestOfTheGroup() {
        let buffer = Held(ChannelBuffer<String>(bound: 30, policy: .dropGroups))
        #expect(buffer.offer("K0", weight: packet(10, key: true)))
        #expect(buffer.offer("f1", weight: packet(10)))
        #expect(buffer.take()?.element == "K0", "the group's start is sent")
        #expect(buffer.offer("a1", weight: packet(5, video: false)))
        #expect(buffer.offer("f2", weight: packet(10)))
        // 25 held: a frame of 10 does not fit. What waits goes (the unsent rest of the group,
        // one group), and the frame, which cannot start a stream.
        #expect(!buffer.offer("f3", weight: packet(10)))
        #expect(buffer.awaitingGroup && buffer.isEmpty && buffer.cost == 0)
        #expect(!buffer.offer("a2", weight: packet(5, video: false)), "audio waits for the keyframe with the video")
        #expect(!buffer.offer("f4", weight: packet(10)))
        #expect(buffer.offer("K5", weight: packet(10, key: true)), "a keyframe starts the stream again")
        #expect(!buffer.awaitingGroup)
        var expected = ChannelDrops()
        expected.items = 6
        expected.cost = 50
        expected.members = 4
        expected.groups = 1
        #expect(buffer.drops == expected, "f1 a1 f2 f3 a2 f4: four frames of the one group")
        // A keyframe that does not fit drops what waits and is taken itself.
        #expect(buffer.offer("f6", weight: packet(10)) && buffer.offer("K7", weight: packet(15, key: true)))
        #expect(buffer.take()?.element == "K7" && buffer.drops.groups == 2)
    }

    @Test func aRestartBeginsAtTheFirstOrTheNewestGroup() {
        let stream: [(String, ChannelWeight)] = [("f0", packet(1)), ("K1", packet(1, key: true)), ("f2", packet(1)),
                                                 ("a3", packet(1, video: false)), ("K4", packet(1, key: true)), ("f5", packet(1))]
        let first = Held(ChannelBuffer<String>(bound: 100, policy: .dropGroups))
        for (name, weight) in stream { first.offer(name, weight: weight) }
        first.restartAtGroup()
        #expect(first.take()?.element == "K1" && first.drops.members == 1 && first.drops.groups == 1)

        let newest = Held(ChannelBuffer<String>(bound: 100, policy: .dropGroups))
        for (name, weight) in stream { newest.offer(name, weight: weight) }
        newest.restartAtGroup(latest: true)
        #expect(newest.take()?.element == "K4")
        #expect(newest.drops.items == 4 && newest.drops.members == 3 && newest.drops.groups == 2, "the rest of one group, and K1's")

        let none = Held(ChannelBuffer<String>(bound: 100, policy: .dropGroups))
        none.offer("f0", weight: packet(1))
        none.restartAtGroup()
        #expect(none.isEmpty && none.awaitingGroup, "nothing to start at: new elements wait for a group")
        #expect(!none.offer("f1", weight: packet(1)) && none.offer("K2", weight: packet(1, key: true)))
    }

    @Test func theRingGrowsInOrderAndLetsGoOfWhatIsTaken() {
        final class Token: Sendable { let n: Int; init(_ n: Int) { self.n = n } }
        let buffer = Held(ChannelBuffer<Token>(bound: 1 << 20, policy: .dropNewest, reserve: 2))
        var expected = 0
        var released: [Int: () -> Bool] = [:]
        for n in 0..<100 {
            do {
                let token = Token(n)
                released[n] = { [weak token] in token == nil }
                buffer.offer(token, weight: .one)
            }
            if n % 3 == 0 {
                let taken = buffer.take()?.element.n
                #expect(taken == expected)
                #expect(released[expected]!(), "a taken element is not kept by the channel")
                expected += 1
            }
        }
        while let token = buffer.take()?.element { #expect(token.n == expected); expected += 1 }
        #expect(expected == 100)
    }

    // MARK: The waiting

    @Test func aBlockedSenderWaitsForRoomAndLosesNothing() {
        let channel = Channel<Int>(capacity: 1, policy: .block)
        #expect(channel.send(1) == .queued)
        let result = Shared<Channel<Int>.SendResult?>(nil)
        let sender = Thread { let sent = channel.send(2); result.withLock { $0 = sent } }
        sender.start()
        waitFor("the sender waits for room") { channel.hasSendersWaiting }
        #expect(result.withLock { $0 } == nil)
        #expect(channel.receive() == 1)
        waitFor("the sender is through") { result.withLock { $0 } != nil }
        #expect(result.withLock { $0 } == .queued)
        #expect(channel.receive() == 2 && channel.drops.items == 0)
    }

    @Test func aConsumerWaitsForTheNextElementAndEndsAtClose() {
        let channel = Channel<Int>(capacity: 4, policy: .dropNewest)
        let got = Shared<[Int?]>([])
        let consumer = Thread { while true { let e = channel.receive(); got.withLock { $0.append(e) }; if e == nil { break } } }
        consumer.start()
        channel.send(7)
        waitFor("the consumer has it") { got.withLock { $0 } == [7] }
        channel.send(8)
        channel.send(9)
        channel.close()
        #expect(channel.send(10) == .closed, "nothing is taken after close")
        waitFor("the consumer drained and ended") { got.withLock { $0 }.count == 4 }
        #expect(got.withLock { $0 } == [7, 8, 9, nil])
    }

    @Test func closeReleasesABlockedSenderAndCancelLetsGoOfEverything() {
        let channel = Channel<Int>(maxBytes: 10, policy: .block, holdsUntilDone: true)
        #expect(channel.send(1, weight: ChannelWeight(cost: 10)) == .queued)
        let result = Shared<Channel<Int>.SendResult?>(nil)
        Thread { let sent = channel.send(2, weight: ChannelWeight(cost: 5)); result.withLock { $0 = sent } }.start()
        waitFor("the sender waits") { channel.hasSendersWaiting }
        let idle = Shared(false)
        Thread { channel.waitUntilIdle(); idle.withLock { $0 = true } }.start()
        channel.close()
        waitFor("the sender is refused") { result.withLock { $0 } == .closed }
        #expect(!idle.withLock { $0 }, "the element still waits")
        channel.cancel()
        waitFor("a drain ends at a cancel") { idle.withLock { $0 } }
        #expect(channel.receive() == nil && channel.pendingCount == 0 && channel.drops.items == 0, "let go, not dropped")
    }

    @Test func aDrainWaitsUntilTheLastElementIsDone() {
        let channel = Channel<Int>(maxBytes: 100, policy: .block, holdsUntilDone: true)
        channel.send(1, weight: ChannelWeight(cost: 30))
        let idle = Shared(false)
        Thread { channel.waitUntilIdle(); idle.withLock { $0 = true } }.start()
        let taken = channel.receiveWeighed()!
        #expect(channel.pendingCost == 30 && channel.pendingCount == 0)
        usleep(20_000)
        #expect(!idle.withLock { $0 }, "taken is not done")
        channel.done(taken.weight)
        waitFor("drained") { idle.withLock { $0 } }
        #expect(channel.pendingCost == 0 && channel.mostPendingCost == 30)
    }

    /// Four senders push 2 000 elements each through a channel of one element: every one
    /// arrives, each sender's in order. A lost wakeup would hang it (and fail the deadline).
    @Test func noWakeupIsLostUnderManySenders() {
        let channel = Channel<Int>(capacity: 1, policy: .block)
        let senders = 4, each = 2000
        let done = Shared(0)
        for s in 0..<senders {
            Thread {
                for i in 0..<each { channel.send(s * each + i) }
                if done.withLock({ $0 += 1; return $0 }) == senders { channel.close() }
            }.start()
        }
        var last = [Int](repeating: -1, count: senders)
        var count = 0
        while let value = channel.receive() {
            let s = value / each
            #expect(value > last[s], "in order per sender")
            last[s] = value
            count += 1
        }
        #expect(count == senders * each)
    }

    @Test func anOutputWorkerHandlesEverythingSentBeforeItsFinish() {
        let seen = Shared<[Int]>([])
        let worker = OutputWorker<Int>(name: "test.worker", capacity: 8, policy: .block) { n in seen.withLock { $0.append(n) } }
        for n in 0..<100 { #expect(worker.send(n)) }
        worker.finish()
        #expect(worker.hasEnded)
        #expect(seen.withLock { $0 } == Array(0..<100))
        #expect(!worker.send(100), "a finished worker takes nothing")
    }
}
