import Foundation
import ReelSystem

/// Claiming the clips folder for a recording, and giving it back when the recording does not
/// start: the folder's lock, the refusals of a folder that holds another recording's clips,
/// and the first manifest, written only where none is.
extension RecordingSession {
    /// Claims the folder for a recording into `target`: creates it if need be, refuses it if it
    /// is a file or holds another recording's clips or manifest (nothing in it is touched), and
    /// writes the manifest. Undone by ``releaseClaim()`` if the recording does not start.
    func claim(target: URL, keepsClips: Bool) throws {
        do {
            try claimFolder(target: target, keepsClips: keepsClips)
        } catch {
            releaseFolderLock()
            throw error
        }
    }

    private func claimFolder(target: URL, keepsClips: Bool) throws {
        var info = stat()
        let existed = stat(folder.path, &info) == 0
        if existed {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw ReelError(.fileExists, "\(folder.path) is a file, not a folder", hint: "choose a folder for the clips")
            }
            let lock: RecordingLock
            do {
                lock = try RecordingLock.lockExisting(folder, exclusive: true)
            } catch let error as ReelError where error.code == .busy {
                throw ReelError(.fileExists, "\(folder.path) is in use by another recording right now\(RecordingLock.holder(of: folder).map { " (\($0))" } ?? "")",
                                hint: "choose another name or folder for the clips")
            }
            state.withLock { $0.folderLock = lock }
            if let other = try? ClipsManifest.read(in: folder) {
                // A recording killed before its first clip held anything: nothing of it to keep.
                _ = Self.removeEmptyLeftover(folder, manifest: other)
            }
            if let other = try? ClipsManifest.read(in: folder), other.state == .merged {
                throw ReelError(.fileExists, "\(folder.path) holds what is left of the clips of \(other.target), which were merged into it already",
                                hint: "delete the folder, or choose another name or folder for the clips")
            }
            if let other = try? ClipsManifest.read(in: folder) {
                throw ReelError(.fileExists, "\(folder.path) holds the clips of a recording of \(other.target) that was never merged",
                                hint: Self.recoverHint(folder: folder, otherwise: "or choose another folder for the clips"))
            }
            let taken = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
                .filter { $0 == Self.manifestName || Self.isClipName($0) }.sorted()
            if !taken.isEmpty {
                throw ReelError(.fileExists, "\(folder.path) already holds clips (\(taken.prefix(3).joined(separator: ", "))\(taken.count > 3 ? ", …" : ""))",
                                hint: "choose another folder for the clips; nothing in this one is touched")
            }
        } else {
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch {
                let e = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.code ?? Int(EIO)
                throw Self.folderError(Int32(e), folder)
            }
            let lock = try? RecordingLock.lockExisting(folder, exclusive: true)
            state.withLock { $0.folderLock = lock }
        }
        let manifest = ClipsManifest(target: target.path, state: .recording, keepsClips: keepsClips, clips: [])
        let path = folder.appendingPathComponent(Self.manifestName).path
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let e = errno
            if !existed { rmdir(folder.path) }
            if e == EEXIST {
                throw ReelError(.fileExists, "\(folder.path) is in use by another recording", hint: "choose another folder for the clips")
            }
            throw Self.folderError(e, folder)
        }
        let data = try manifest.encoded()
        let ok = data.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) } == data.count
        let e = errno
        close(fd)
        guard ok else {
            unlink(path)
            if !existed { rmdir(folder.path) }
            throw Self.folderError(e, folder)
        }
        let generation = state.withLock { s -> Int in
            s.manifest = manifest
            s.createdFolder = !existed
            s.generation += 1
            return s.generation
        }
        written.withLock { $0 = generation }
    }

    /// Gives the folder back when a claimed recording did not start: removes the manifest and
    /// the folder if it was created for the recording and is empty.
    func releaseClaim() {
        let (claimed, created) = state.withLock { s -> (Bool, Bool) in
            defer { s.manifest = nil }
            return (s.manifest != nil, s.createdFolder)
        }
        guard claimed else { return }
        unlink(folder.appendingPathComponent(Self.manifestName).path)
        if created { rmdir(folder.path) }
        releaseFolderLock()
    }

    /// The error for a clips folder that cannot be made (or written into) at `folder`.
    static func folderError(_ e: Int32, _ folder: URL) -> ReelError {
        switch e {
        case EEXIST:
            return ReelError(.fileExists, "\(folder.path) is a file, not a folder", hint: "choose a folder for the clips", errno: e)
        case ENOTDIR:
            return ReelError(.fileExists, "\(folder.path) lies inside a file, not a folder", hint: "choose a folder for the clips", errno: e)
        case _ where Syscall.code(forErrno: e) == .permissionDenied:
            return ReelError(.permissionDenied, "cannot create the folder \(folder.path) for the clips", hint: "choose a folder you can write to", errno: e)
        case _ where Syscall.code(forErrno: e) == .insufficientStorage:
            return ReelError(.insufficientStorage, "no space left to create \(folder.path)", errno: e)
        default:
            return ReelError(Syscall.code(forErrno: e, absent: .ioFailure), "cannot create the folder \(folder.path) for the clips: \(Syscall.describe(e))", errno: e)
        }
    }
}
