import Foundation
import Testing
import Reel

/// The check of free space before a recording says what to change, and a folder on a file
/// system that keeps no files is said to be one (it was "only 0 MB free in /proc").
@Suite struct FreeSpaceCheckTests {
    @Test func aFolderOnAFileSystemWithoutFilesCannotHoldRecordings() {
        let error = #expect(throws: ReelError.self) { try RecordingFile.checkFreeSpace(in: URL(fileURLWithPath: "/proc"), minimum: 100_000_000) }
        #expect(error?.code == .permissionDenied, "\(String(describing: error))")
        #expect(error?.message.contains("cannot hold recordings") == true && error?.message.contains("MB free") == false, "\(String(describing: error))")
    }

    @Test func tooLittleFreeSpaceSaysTheMinimumCanBeLowered() {
        let error = #expect(throws: ReelError.self) { try RecordingFile.checkFreeSpace(in: URL(fileURLWithPath: "/tmp"), minimum: .max) }
        #expect(error?.code == .insufficientStorage)
        #expect(error?.hint?.contains("minimum of free space") == true, "\(String(describing: error))")
    }
}
