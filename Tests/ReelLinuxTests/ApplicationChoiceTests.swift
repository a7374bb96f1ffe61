import Foundation
@testable import ReelLinux
import Testing

/// Which applications a recording takes: by name, program or process id, or a process and the
/// processes it started (a window's application), read from this machine's processes.
@Suite struct ApplicationChoiceTests {
    @Test func aProcessTreeTakesTheProcessAndItsChildrenOnly() throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["5"]
        try child.run()
        defer { child.terminate() }
        let me = getpid()
        let tree = ApplicationChoice(parts: [.processTree(me)], excluding: false)
        #expect(tree.takes(applicationName: "", binary: "", processID: me))
        #expect(tree.takes(applicationName: "", binary: "", processID: child.processIdentifier))
        #expect(!tree.takes(applicationName: "", binary: "", processID: getppid()))
        #expect(!tree.takes(applicationName: "x", binary: "x", processID: nil))
        // By pid, a name takes that process only.
        let byPID = ApplicationChoice(names: ["\(me)"], excluding: false)
        #expect(byPID.takes(applicationName: "", binary: "", processID: me))
        #expect(!byPID.takes(applicationName: "", binary: "", processID: child.processIdentifier))
        #expect(ProcessAncestry.commandName(child.processIdentifier) == "sleep")
        #expect(ApplicationChoice.Part.processTree(me).notPlaying.contains("the window's application (process \(me)"))
    }
}
