#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import ReelFFmpeg
import ReelSystem

/// The recording file's placement as a value: each step decided without an encoder or a disk.
@Suite struct RecordingPlacementTests {
    let target = URL(fileURLWithPath: "/videos/talk.mp4")
    let hidden = URL(fileURLWithPath: "/videos/.talk.new-42-7.mp4")
    let old = Self.identity(10), other = Self.identity(11)

    static func identity(_ inode: UInt64) -> FileIdentity {
        var info = stat()
        info.st_dev = 1
        info.st_ino = __ino_t(inode)
        return FileIdentity(info)
    }
    var beside: [URL] { [URL(fileURLWithPath: "/videos/talk (2).mp4")] }

    @Test func aReplacementTakesTheNameOnceItsFirstPartIsOnTheDisk() {
        var placement = RecordingPlacement(hidden: hidden, replacing: target, file: old)
        #expect(placement.url == hidden && placement.replacing == target && placement.isProvisional && !placement.hasReplacedAFile)
        #expect(placement.firstPartOnDisk(finishing: false, atTarget: old, beside: beside) == .replace(hidden, with: target))
        placement.named(target)
        #expect(placement.state == .named(target) && placement.replacing == nil && placement.hasReplacedAFile)
        // Nothing more to take.
        #expect(placement.firstPartOnDisk(finishing: true, atTarget: old, beside: beside) == .none)
    }

    /// Another file put at the name (the one to replace moved away) is never replaced: the
    /// recording waits for its finish and takes a free name beside it.
    @Test func aFilePutAtTheNameMeanwhileIsNeverReplaced() {
        var placement = RecordingPlacement(hidden: hidden, replacing: target, file: old)
        #expect(placement.firstPartOnDisk(finishing: false, atTarget: other, beside: beside) == .none)
        #expect(placement.state == .displaced(hidden: hidden, target: target))
        #expect(placement.firstPartOnDisk(finishing: true, atTarget: other, beside: beside) == .placeAtFirstFree(hidden, candidates: beside))
        placement.named(beside[0])
        #expect(placement.url == beside[0])
    }

    /// The file to replace gone from the name: the recording simply takes it.
    @Test func aNameLeftFreeIsTaken() {
        var placement = RecordingPlacement(hidden: hidden, replacing: target, file: old)
        #expect(placement.firstPartOnDisk(finishing: false, atTarget: nil, beside: beside) == .replace(hidden, with: target))
    }

    @Test func aMovedFileIsFollowedAndADeletedOneCopiedBack() {
        let moved = URL(fileURLWithPath: "/videos/sub/renamed.mp4"), home = URL(fileURLWithPath: "/home/me")
        var placement = RecordingPlacement(named: target)
        #expect(!placement.hasReplacedAFile)
        #expect(placement.found(.inPlace, rescueFolders: [home]) == .none && placement.state == .named(target))
        #expect(placement.found(.moved(moved), rescueFolders: [home]) == .none)
        #expect(placement.state == .moved(moved) && placement.url == moved)
        #expect(placement.found(.deleted, rescueFolders: [home]) == .copyBack(name: moved, folders: [moved.deletingLastPathComponent(), home]))
        #expect(placement.state == .deleted(moved))
        placement.named(moved)
        #expect(!placement.hasReplacedAFile, "copied back: its own file still")
        placement.finalised()
        #expect(placement.state == .finalised(moved))
    }

    /// What became of the file is kept, to be said: moved (from its first place), copied back
    /// to its folder, or saved in another folder when its own took nothing more.
    @Test func whatBecameOfTheFileIsKept() {
        let moved = URL(fileURLWithPath: "/videos/sub/renamed.mp4"), home = URL(fileURLWithPath: "/home/me")
        var placement = RecordingPlacement(named: target)
        #expect(placement.relocation == nil)
        _ = placement.found(.moved(moved), rescueFolders: [home])
        _ = placement.found(.moved(URL(fileURLWithPath: "/videos/again.mp4")), rescueFolders: [home])
        #expect(placement.relocation == .moved(from: target), "the place it was made at, not the last")

        var copied = RecordingPlacement(named: target)
        _ = copied.found(.deleted, rescueFolders: [home])
        copied.named(URL(fileURLWithPath: "/videos/talk (rescued).mp4"))
        #expect(copied.relocation == .copiedBack(to: URL(fileURLWithPath: "/videos/talk (rescued).mp4")))

        var rescued = RecordingPlacement(named: target)
        _ = rescued.found(.deleted, rescueFolders: [home])
        rescued.named(home.appendingPathComponent("talk.mp4"))
        #expect(rescued.relocation == .savedElsewhere(from: target))
    }

    /// Before it has its name, where the file is is not followed: its writer renames it itself.
    @Test func aProvisionalFileIsNotFollowed() {
        var placement = RecordingPlacement(hidden: hidden, replacing: target, file: old)
        #expect(placement.found(.deleted, rescueFolders: []) == .none && placement.url == hidden)
    }

    /// Given up: a file that never took its name goes (the old file stays); one that did stays.
    @Test func anAbandonedReplacementGoesAndANamedFileStays() {
        var provisional = RecordingPlacement(hidden: hidden, replacing: target, file: old)
        #expect(provisional.abandon() == .remove(hidden))
        #expect(provisional.abandon() == .none)
        var named = RecordingPlacement(named: target)
        #expect(named.abandon() == .none && named.url == target)
        var finished = RecordingPlacement(named: target)
        finished.finalised()
        #expect(finished.abandon() == .none && finished.state == .finalised(target))
    }
}
