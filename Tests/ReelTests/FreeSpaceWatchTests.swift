import Foundation
import Synchronization
import Testing
import Reel
import ReelTestSupport

/// The minimum of free space is decided on the recorder's thread from figures, and the disk is
/// read on a queue of its own: the recorder's thread makes no system call for it. (It read
/// `statvfs` itself, every second and every quarter megabyte written.)
@Suite struct FreeSpaceWatchTests {
    @Test func theDiskIsLookedAtEverySecondRecordedAndEveryQuarterMegabyteWritten() {
        var guarding = FreeSpaceGuard(minimum: 1_000_000)
        func due(_ seconds: Double, _ written: Int64) -> Bool {
            guarding.isDue(recorded: MediaTime(seconds: seconds), written: written)
        }
        #expect(due(0, 0), "at once the first time")
        #expect(!due(0.5, 100_000))
        #expect(due(0.5, 262_144), "a quarter megabyte written")
        #expect(!due(1.4, 262_145))
        #expect(due(1.5, 262_145), "a second recorded since")
        #expect(!due(2, 300_000))
    }

    @Test func whatReachedTheDiskSinceItWasReadCounts() {
        let guarding = FreeSpaceGuard(minimum: 10_000_000)
        let reading = FreeSpaceGuard.Reading(available: 15_000_000, total: 1_000_000_000, onDisk: 1_000_000)
        #expect(!guarding.leavesTooLittle(reading, onDisk: 1_000_000, toCome: 4_000_000))
        #expect(guarding.leavesTooLittle(reading, onDisk: 1_000_000, toCome: 5_000_001), "what is on its way counts as used")
        #expect(!guarding.leavesTooLittle(reading, onDisk: 5_000_000, toCome: 1_000_000))
        #expect(guarding.leavesTooLittle(reading, onDisk: 5_000_001, toCome: 1_000_000), "over 4 MB reached the disk since it was read")
        #expect(guarding.leavesTooLittle(FreeSpaceGuard.Reading(available: 0, total: 0, onDisk: 0), onDisk: 0, toCome: 0),
                "a file system that keeps no files (/proc)")
        #expect(!guarding.leavesTooLittle(nil, onDisk: .max, toCome: .max), "a disk that cannot be told stops nothing")
        #expect(!FreeSpaceGuard(minimum: nil).leavesTooLittle(reading, onDisk: .max / 2, toCome: .max / 2), "no minimum")
    }

    @Test func theWatchReadsTheDiskOffTheThreadThatAsks() throws {
        let asker = pthread_self()
        let readOnAsker = Atomic<Int>(0), reads = Atomic<Int>(0)
        let available = Atomic<Int64>(50_000_000)
        let watch = FreeSpaceWatch(folder: URL(fileURLWithPath: "/tmp")) { _ in
            reads.add(1, ordering: .relaxed)
            if pthread_equal(pthread_self(), asker) != 0 { readOnAsker.add(1, ordering: .relaxed) }
            return (available.load(ordering: .relaxed), 1_000_000_000)
        }
        #expect(watch.latest == FreeSpaceGuard.Reading(available: 50_000_000, total: 1_000_000_000, onDisk: 0), "read once when made")
        readOnAsker.store(0, ordering: .relaxed)
        available.store(40_000_000, ordering: .relaxed)
        watch.refresh(onDisk: 7_000_000)
        watch.settle()
        #expect(watch.latest == FreeSpaceGuard.Reading(available: 40_000_000, total: 1_000_000_000, onDisk: 7_000_000))
        #expect(readOnAsker.load(ordering: .relaxed) == 0, "a refresh reads on the watch's queue")
        #expect(reads.load(ordering: .relaxed) == 2)
    }

    @Test func theClipsFolderIsFollowedOnTheWatchsQueueBeforeItsDiskIsRead() throws {
        let asker = pthread_self()
        let steps = Mutex<[String]>([])
        let onAsker = Atomic<Int>(0)
        let watch = FreeSpaceWatch(folder: { URL(fileURLWithPath: "/tmp") }, reader: { _ in
            steps.withLock { $0.append("read") }
            if pthread_equal(pthread_self(), asker) != 0 { onAsker.add(1, ordering: .relaxed) }
            return (1, 1)
        }, follow: {
            steps.withLock { $0.append("follow") }
            if pthread_equal(pthread_self(), asker) != 0 { onAsker.add(1, ordering: .relaxed) }
        })
        #expect(steps.withLock { $0 } == ["read"], "read once when made, not followed")
        onAsker.store(0, ordering: .relaxed)
        watch.refresh(onDisk: 0)
        watch.settle()
        #expect(steps.withLock { $0 } == ["read", "follow", "read"], "followed, then read")
        #expect(onAsker.load(ordering: .relaxed) == 0, "neither on the thread that asked")

        let followed = Atomic<Int>(0)
        let onlyFollows = FreeSpaceWatch(folder: { URL(fileURLWithPath: "/tmp") }, reads: false, follow: { followed.add(1, ordering: .relaxed) })
        #expect(onlyFollows.latest == nil, "no minimum: the disk is not read")
        onlyFollows.refresh(onDisk: 0)
        onlyFollows.settle()
        #expect(followed.load(ordering: .relaxed) == 1 && onlyFollows.latest == nil)
    }

    /// A recording faster than real time on a disk whose free space the test supplies (what
    /// the folder's files leave of 40 MB): it stops for the disk near the minimum, and the
    /// disk is never read on the recorder's thread.
    @Test func aRecordingStopsNearTheMinimumOfASuppliedDisk() async throws {
        let folder = try TemporaryDirectory(prefix: "reel-free-space")
        let url = folder.url.appendingPathComponent("supplied.mp4")
        let capacity: Int64 = 40_000_000, minimum: Int64 = 28_000_000
        @Sendable func used() -> Int64 {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.url.path)) ?? []
            return names.reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: folder.url.appendingPathComponent($1).path)[.size] as? Int64) ?? 0) }
        }
        let readOnRecorderThread = Atomic<Int>(0), reads = Atomic<Int>(0)
        let summary = try await MinimumFreeSpaceTests.recordNoise(into: url, keepingFree: minimum) { recorder in
            recorder.freeSpaceReader = { _ in
                reads.add(1, ordering: .relaxed)
                if Thread.current.name == "reel.recorder" { readOnRecorderThread.add(1, ordering: .relaxed) }
                return (capacity - used(), capacity)
            }
        }
        #expect(summary.ending == .lowDiskSpace)
        let free = capacity - used()
        #expect(free >= minimum - 1_000_000 && free < minimum + 4_000_000, "stopped with \(free) bytes of the supplied disk free, the minimum \(minimum)")
        #expect(reads.load(ordering: .relaxed) > 10, "read again as the recording went on")
        #expect(readOnRecorderThread.load(ordering: .relaxed) == 0, "the disk was read on the recorder's thread")
        #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == Int(summary.frames), "finalised, every frame in it")
    }
}
