import Testing
import ReelCore

@Suite struct RecorderStateMachineTests {
    let video = SourceID(0), mic = SourceID(1)

    func recording() throws -> RecorderStateMachine {
        var machine = RecorderStateMachine()
        try machine.prepare()
        machine.prepared(sources: [video, mic], videoSource: video)
        return machine
    }

    @Test func lifecycleRecordsOnce() throws {
        var machine = RecorderStateMachine()
        #expect(!machine.isRecording)
        try machine.prepare()
        #expect(machine.phase == .preparing && !machine.isRecording)
        #expect { try machine.prepare() } throws: { ($0 as? ReelError)?.code == .alreadyRunning }
        machine.preparationFailed()
        #expect(machine.phase == .idle, "a failed preparation can be tried again")
        try machine.prepare()
        machine.prepared(sources: [video], videoSource: video)
        #expect(machine.isRecording)
        machine.finished()
        #expect(!machine.isRecording)
        #expect { try machine.prepare() } throws: { ($0 as? ReelError)?.code == .cannotAddOutput }
    }

    @Test func aScheduledPauseCountsFromItsTimeOn() throws {
        var machine = RecorderStateMachine()
        machine.schedule(pause: true, at: MediaTime(seconds: 2))
        machine.schedule(pause: false, at: MediaTime(seconds: 3))
        #expect(!machine.isPaused(at: MediaTime(seconds: 2.5)), "not recording yet: not paused")
        try machine.prepare()
        machine.prepared(sources: [video], videoSource: video)
        #expect(!machine.isPaused(at: MediaTime(seconds: 1)), "before its time the recording runs")
        #expect(machine.isPaused(at: MediaTime(seconds: 2)))
        #expect(machine.isPaused(at: MediaTime(seconds: 2.9)))
        #expect(!machine.isPaused(at: MediaTime(seconds: 3)))
        #expect(machine.takeControls() == [.pause(MediaTime(seconds: 2)), .resume(MediaTime(seconds: 3))])
        #expect(machine.takeControls().isEmpty)
    }

    @Test func anImmediatePauseCountsAtOnceAndRepeatsAreNoOps() throws {
        var machine = try recording()
        let now = MediaTime(seconds: 1)
        #expect(try machine.request(pause: true, at: now))
        #expect(machine.isPaused(at: now))
        #expect(try !machine.request(pause: true, at: now + MediaTime(seconds: 1)), "pausing twice does nothing")
        #expect(try machine.request(pause: false, at: MediaTime(seconds: 4)))
        #expect(!machine.isPaused(at: MediaTime(seconds: 4)))
        #expect(machine.takeControls() == [.pause(now), .resume(MediaTime(seconds: 4))])
        machine.finished()
        #expect(!machine.isPaused(at: MediaTime(seconds: 5)))
        #expect { try machine.request(pause: true, at: .zero) } throws: { ($0 as? ReelError)?.code == .notRunning }
    }

    @Test func notRecordingCannotPause() {
        var machine = RecorderStateMachine()
        #expect { try machine.request(pause: true, at: .zero) } throws: { ($0 as? ReelError)?.code == .notRunning }
        #expect { try machine.request(pause: false, at: .zero) } throws: { ($0 as? ReelError)?.code == .notRunning }
    }

    @Test func theRecordingEndsOnceEverySourceHasGone() throws {
        var machine = try recording()
        let first = machine.sourceGone(video)
        #expect(first.videoSourceGone && !first.endRecording)
        #expect(machine.takeControls() == [.videoSourceGone])
        machine.sourceResumed(video)
        #expect(machine.sourceGone(mic) == RecorderStateMachine.SourceGoneAction(), "the video came back: one is left")
        let last = machine.sourceGone(video)
        #expect(last.videoSourceGone && last.endRecording)
        #expect(machine.sourcesWentAway && machine.isRecording, "recording until the queue has drained")
        #expect(machine.sourceGone(mic) == RecorderStateMachine.SourceGoneAction(), "the end is asked for once")
        #expect(machine.sourceGone(SourceID(9)) == RecorderStateMachine.SourceGoneAction())
    }

    @Test func unknownSourcesAndIdleRecordersIgnoreSourceEvents() {
        var machine = RecorderStateMachine()
        #expect(machine.sourceGone(video) == RecorderStateMachine.SourceGoneAction())
        #expect(machine.pendingControls.isEmpty)
    }
}

@Suite struct VideoTrackStateTests {
    @Test func theSourceGoingHandsTheEndToTheAudio() {
        var state = VideoTrackState.awaitingFrames
        #expect(state.recordsFrames && state.expectsFrames && state.videoDecidesEnd(hasAudio: true))
        #expect(!state.isDone(hasAudio: true))
        state.sourceWentAway()
        #expect(state == .sourceGone)
        #expect(state.recordsFrames, "frames still queued are recorded")
        #expect(!state.expectsFrames)
        #expect(!state.videoDecidesEnd(hasAudio: true) && state.videoDecidesEnd(hasAudio: false))
        #expect(state.isDone(hasAudio: true) && !state.isDone(hasAudio: false))
    }

    @Test func theLimitCompletesTheTrackForGood() {
        var state = VideoTrackState.awaitingFrames
        state.reachedLimit()
        #expect(!state.recordsFrames && state.isDone(hasAudio: false) && state.videoDecidesEnd(hasAudio: true))
        state.sourceWentAway()
        #expect(state == .complete, "once the limit fixed the end, a source going changes nothing")
    }
}
