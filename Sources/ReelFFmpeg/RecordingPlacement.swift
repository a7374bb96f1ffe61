import Foundation
import ReelCore
import ReelSystem

/// Where a recording's file is in its life, as a value: decisions only, acted on by its owner
/// (``MovieFileSink``), so that every step can be tested without an encoder or a disk.
///
/// ```
/// provisional ──first part on the disk──► named ──someone moves it──► moved
///     │  (a hidden name beside the file it     │ ╲──someone deletes it──► deleted ─copied back─► named
///     │   replaces; that file stays until then) │
///     └─another file put at the name─► displaced ─finish─► named (a free name beside)
/// named / moved ──finish──► finalised        provisional / displaced ──abandon──► abandoned (hidden file removed)
/// ```
package struct RecordingPlacement: Sendable, Equatable {
    /// The phases.
    package enum State: Sendable, Equatable {
        /// Written under a hidden name of its own beside `target` until its first part is on
        /// the disk; `replacing` is the file at `target` when the recording began (it stays
        /// until then: a kill leaves it as it was).
        case provisional(hidden: URL, target: URL, replacing: FileIdentity?)
        /// As provisional, but another file was put at `target` meanwhile (the one to replace
        /// moved away): that one is never replaced; the recording takes a free name beside it
        /// when it is finished.
        case displaced(hidden: URL, target: URL)
        /// At its name.
        case named(URL)
        /// Renamed or moved by someone (on the same disk) while recorded: now at this path.
        case moved(URL)
        /// Deleted by someone while recorded (last at this path): only the writer's descriptor
        /// reaches it; it is copied back before it is finalised.
        case deleted(URL)
        /// Finished at this path.
        case finalised(URL)
        /// Given up (last at this path).
        case abandoned(URL)
    }

    /// What the owner does next.
    package enum Action: Sendable, Equatable {
        /// Nothing.
        case none
        /// Renames the file at the first URL to the second, replacing the file there.
        case replace(URL, with: URL)
        /// Gives the file at the URL the first free name of the candidates, replacing none.
        case placeAtFirstFree(URL, candidates: [URL])
        /// Copies the deleted file's content back to the first of the folders that takes it,
        /// under a free name for the URL's last component there.
        case copyBack(name: URL, folders: [URL])
        /// Removes the (hidden) file at the URL: nothing of it is kept.
        case remove(URL)
    }

    /// Where the file is now.
    package private(set) var state: State
    /// What became of the file while recorded, if someone moved or deleted it (the first
    /// place it was moved from is kept across further moves).
    package private(set) var relocation: FileRelocation?

    /// A file written at its name from the start.
    package init(named url: URL) {
        state = .named(url)
    }

    /// A file written under `hidden` until it replaces `target` (see ``State/provisional(hidden:target:replacing:)``).
    package init(hidden: URL, replacing target: URL, file: FileIdentity?) {
        state = .provisional(hidden: hidden, target: target, replacing: file)
    }

    /// Where the file is being written now (its last known path).
    package var url: URL {
        switch state {
        case .provisional(let hidden, _, _), .displaced(let hidden, _): return hidden
        case .named(let url), .moved(let url), .deleted(let url), .finalised(let url), .abandoned(let url): return url
        }
    }

    /// The file it replaces once it holds something, while it has not yet.
    package var replacing: URL? {
        switch state {
        case .provisional(_, let target, _), .displaced(_, let target): return target
        default: return nil
        }
    }

    /// Whether the file is still under its hidden name, waiting to replace another.
    package var isProvisional: Bool {
        switch state {
        case .provisional, .displaced: return true
        default: return false
        }
    }

    /// Whether the file has taken the name of a file it replaced (or a free one beside it):
    /// it is all there is at that name then, and is never given up as holding nothing.
    package private(set) var hasReplacedAFile = false

    /// The first part of the recording is on the disk (or, `finishing`, the recording is being
    /// finalised): a provisional file takes its name now. `atTarget` is the file at the name
    /// now. A displaced one waits for the finish, then takes the first free of `beside`.
    package mutating func firstPartOnDisk(finishing: Bool, atTarget: FileIdentity?, beside: [URL]) -> Action {
        switch state {
        case .provisional(let hidden, let target, let replacing):
            if let atTarget, atTarget != replacing {
                state = .displaced(hidden: hidden, target: target)
                return finishing ? .placeAtFirstFree(hidden, candidates: beside) : .none
            }
            return .replace(hidden, with: target)
        case .displaced(let hidden, _):
            return finishing ? .placeAtFirstFree(hidden, candidates: beside) : .none
        default:
            return .none
        }
    }

    /// The owner gave the file the name `url` (``Action/replace(_:with:)``,
    /// ``Action/placeAtFirstFree(_:candidates:)``) or copied it back there (``Action/copyBack(name:folders:)``).
    package mutating func named(_ url: URL) {
        if isProvisional { hasReplacedAFile = true }
        if case .deleted(let last) = state {
            relocation = url.deletingLastPathComponent().standardizedFileURL == last.deletingLastPathComponent().standardizedFileURL
                ? .copiedBack(to: url) : .savedElsewhere(from: last)
        }
        state = .named(url)
    }

    /// What the writer's lock says of where the file is: someone moved it (it is followed) or
    /// deleted it (it is to be copied back, to its folder or to the first of `rescueFolders`).
    package mutating func found(_ whereabouts: RecordingLock.Whereabouts, rescueFolders: [URL]) -> Action {
        switch state {
        case .named, .moved, .deleted: break
        default: return .none
        }
        switch whereabouts {
        case .inPlace:
            return .none
        case .moved(let now):
            if relocation == nil { relocation = .moved(from: url) }
            state = .moved(now)
            return .none
        case .deleted:
            let last = url
            state = .deleted(last)
            return .copyBack(name: last, folders: [last.deletingLastPathComponent()] + rescueFolders)
        }
    }

    /// Whether the file is a copy made back of the one recorded (deleted while recorded), not
    /// the file the writer holds.
    package var isCopy: Bool {
        switch relocation {
        case .copiedBack?, .savedElsewhere?: return true
        case .moved?, nil: return false
        }
    }

    /// The file was found at `url` as it was being finalised (someone renamed or moved it
    /// then): it is finalised there, and said to have moved.
    package mutating func found(movedTo url: URL) {
        switch state {
        case .named, .moved: break
        default: return
        }
        guard url != self.url else { return }
        if relocation == nil { relocation = .moved(from: self.url) }
        state = .moved(url)
    }

    /// The file is finalised where it is.
    package mutating func finalised() {
        switch state {
        case .named, .moved, .deleted: state = .finalised(url)
        default: break
        }
    }

    /// The recording is given up: a file that never took its name goes (the file it was to
    /// replace stays); one that did is kept as it is.
    package mutating func abandon() -> Action {
        switch state {
        case .provisional(let hidden, _, _), .displaced(let hidden, _):
            state = .abandoned(hidden)
            return .remove(hidden)
        case .abandoned, .finalised:
            return .none
        case .named(let url), .moved(let url), .deleted(let url):
            state = .abandoned(url)
            return .none
        }
    }
}
