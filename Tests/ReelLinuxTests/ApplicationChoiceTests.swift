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

/// A stream's sink is said by its name, never by its bare index (s2 F8: a stream moved when its
/// sink was unloaded was said moved "to '19'").
@Suite struct StreamSinkNameTests {
    @Test func aSinkIsNamedAndOneGoneIsSaidToBeGone() {
        let sinks: [UInt32: String] = [3: "out", 19: "reel-app-42"]
        #expect(PlayingStream.sinkName(index: 3, in: sinks) == "out")
        #expect(PlayingStream.sinkName(index: 19, in: sinks) == "reel-app-42")
        let gone = PlayingStream.sinkName(index: 20, in: sinks)
        #expect(gone.contains("removed") && gone != "20", "\(gone)")
        #expect(PlayingStream.sinkName(index: 4, in: [4: ""]).contains("removed"))
        // A stream linked to no sink (PipeWire's PA_INVALID_INDEX) is not on a removed one (s6 N13).
        let none = PlayingStream.sinkName(index: UInt32.max, in: sinks)
        #expect(none.contains("no sink") && !none.contains("removed") && !none.contains("4294967295"), "\(none)")
    }
}
