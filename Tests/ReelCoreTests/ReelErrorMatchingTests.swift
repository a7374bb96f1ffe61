import Testing
import ReelCore

/// `ReelError` codes match in `catch` and `switch` patterns, as ReplayKit's error codes do.
@Suite struct ReelErrorMatchingTests {
    func fail(_ code: ReelError.Code) throws { throw ReelError(code, "failed on purpose") }

    @Test func aCatchPatternNamesTheCode() {
        var caught = ""
        do { try fail(.alreadyRunning) }
        catch ReelError.notRunning { caught = "notRunning" }
        catch ReelError.alreadyRunning { caught = "alreadyRunning" }
        catch { caught = "other" }
        #expect(caught == "alreadyRunning")
    }

    @Test func anErrorOfAnotherTypeDoesNotMatch() {
        struct Other: Error {}
        var caught = ""
        do { throw Other() }
        catch ReelError.alreadyRunning { caught = "alreadyRunning" }
        catch { caught = "other" }
        #expect(caught == "other")
    }

    @Test func aSwitchOverAReelErrorNamesTheCode() {
        let error = ReelError(.fileExists, "there")
        let kind: String
        switch error {
        case ReelError.busy: kind = "busy"
        case ReelError.fileExists: kind = "fileExists"
        default: kind = "other"
        }
        #expect(kind == "fileExists")
        #expect(ReelError.Code.invalidMedia ~= (ReelError(.invalidMedia, "bad") as any Error))
        #expect(!(ReelError.Code.invalidMedia ~= (ReelError(.ioFailure, "bad") as any Error)))
    }
}
