import Foundation
import ReelCore
@testable import ReelLinux
import Testing

/// `X11ScreenSource.diagnoseDisplay` on a scripted server: the screen's size, and shared
/// memory found usable, not offered, or refused when an image is read into it. (The real
/// server's refusals — no MIT-SHM, a server that cannot attach — are tested through
/// `reel doctor` in ReelCLITests.)
@Suite struct DisplayDiagnosisTests {
    let size = PixelSize(width: 800, height: 600)

    @Test func sharedMemoryThatWorksIsUsable() throws {
        let server = ScriptedX11Server(displayName: ":7", screenSize: size, images: [.picture(0xFF00_0000)])
        let diagnosis = try X11ScreenSource.diagnoseDisplay(nil, server: server)
        #expect(diagnosis == DisplayDiagnosis(name: ":7", screenSize: size, sharedMemory: .usable))
        #expect(server.imageRequests.map(\.shared) == [true], "one image, read into shared memory")
        #expect(server.openConnections == 0, "the connection is closed afterwards")
    }

    @Test func aServerWithoutMITSHMIsNotOffered() throws {
        let server = ScriptedX11Server(screenSize: size, sharedMemory: false, images: [])
        #expect(try X11ScreenSource.diagnoseDisplay(nil, server: server).sharedMemory == .notOffered)
        #expect(server.imageRequests.isEmpty, "nothing is read when the server has no MIT-SHM")
    }

    @Test func aServerThatRefusesTheSharedImageIsRefused() throws {
        let server = ScriptedX11Server(screenSize: size, images: [.sharedMemoryRefused])
        guard case .refused(let reason) = try X11ScreenSource.diagnoseDisplay(nil, server: server).sharedMemory else {
            Issue.record("a refused shared image is a refusal")
            return
        }
        #expect(reason.contains("X error 10"), "\(reason)")
    }

    @Test func noServerThrowsWhatRecordingWouldMeet() {
        let server = ScriptedX11Server(screenSize: size, connections: [.refused], images: [])
        #expect(throws: ReelError.self) { try X11ScreenSource.diagnoseDisplay(":7", server: server) }
    }
}
