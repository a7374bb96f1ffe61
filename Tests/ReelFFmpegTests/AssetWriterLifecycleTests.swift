import Testing
import ReelCore
import ReelFFmpeg

/// The asset writer's life as a value, without an encoder or a file: what each call does in
/// each state, the misuses `AVAssetWriter` raises exceptions for refused with an error that
/// says what happened.
@Suite struct AssetWriterLifecycleTests {
    /// A lifecycle in `AVAssetWriter`'s shape, writing, its session started at 10 s.
    static func writing(at start: MediaTime = MediaTime(seconds: 10)) -> AssetWriterLifecycle {
        var life = AssetWriterLifecycle(needsSession: true)
        #expect(life.startingToWrite() == .proceed)
        life.opened()
        let r1 = life.startSession(at: start)
        #expect(r1 == .proceed)
        return life
    }

    @Test func aWriterGoesFromUnknownThroughWritingToCompleted() {
        var life = AssetWriterLifecycle(needsSession: true)
        #expect(life.status == .unknown && life.isActive && !life.isWriting)
        #expect(life.addingInput() == .proceed)
        #expect(life.startingToWrite() == .proceed)
        #expect(life.status == .unknown, "not writing until the file is open")
        life.opened()
        #expect(life.status == .writing && life.isWriting)
        let r2 = life.startSession(at: MediaTime(seconds: 3))
        #expect(r2 == .proceed)
        #expect(life.start == MediaTime(seconds: 3) && life.end == nil)
        let r3 = life.appending(.video)
        #expect(r3 == .proceed && life.appendedAnything)
        let r4 = life.endSession(at: MediaTime(seconds: 5))
        #expect(r4 == .proceed)
        #expect(life.session == .ended(start: MediaTime(seconds: 3), end: MediaTime(seconds: 5)))
        let r5 = life.finishing()
        #expect(r5 == .proceed)
        #expect(life.status == .writing && !life.isWriting, "finishing: shown as writing, taking nothing")
        let r6 = life.appending(.audio)
        #expect(r6 == .ignore)
        life.completed()
        #expect(life.status == .completed && !life.isActive)
        let r7 = life.finishing()
        #expect(r7 == .ignore, "a second finish does nothing")
        let r8 = life.cancel()
        let r9 = life.fail()
        #expect(!r8 && !r9)
        #expect(life.status == .completed, "an ended writer stays as it ended")
    }

    @Test func appendingBeforeStartWritingIsAMisuse() {
        var life = AssetWriterLifecycle(needsSession: true)
        let error = life.appending(.video).error
        #expect(error?.code == .notRunning && error?.message.contains("before startWriting()") == true)
        #expect(!life.appendedAnything)
    }

    @Test func appendingBeforeTheSessionIsAMisuseOnlyInApplesShape() {
        var apple = AssetWriterLifecycle(needsSession: true)
        _ = apple.startingToWrite()
        apple.opened()
        let r10 = apple.appending(.audio)
        #expect(r10.error?.message.contains("before startSession(atSourceTime:)") == true)

        var configured = AssetWriterLifecycle(needsSession: false)
        _ = configured.startingToWrite()
        configured.opened()
        let r11 = configured.appending(.video)
        #expect(r11 == .proceed)
        #expect(configured.start == .zero, "a configured writer's file starts at zero")
    }

    @Test func startingTheSessionTwiceOrAfterAnAppendIsAMisuse() {
        var life = Self.writing()
        let r12 = life.startSession(at: .zero)
        #expect(r12.error?.code == .alreadyRunning)
        #expect(life.start == MediaTime(seconds: 10), "the first start stays")

        var configured = AssetWriterLifecycle(needsSession: false)
        _ = configured.startingToWrite()
        configured.opened()
        _ = configured.appending(.video)
        let r13 = configured.startSession(at: .zero)
        #expect(r13.error?.code == .alreadyRunning)
    }

    @Test func startingTheSessionOrWritingAtTheWrongTimeIsAMisuse() {
        var life = AssetWriterLifecycle(needsSession: true)
        let r14 = life.startSession(at: .zero)
        #expect(r14.error?.message.contains("before startWriting()") == true)
        let r15 = life.endSession(at: .zero)
        #expect(r15.error?.message.contains("before startWriting()") == true)
        let r16 = life.finishing()
        #expect(r16.error?.message.contains("finishWriting() was called before startWriting()") == true)
        _ = life.startingToWrite()
        life.opened()
        #expect(life.startingToWrite().error?.message.contains("twice") == true)
        #expect(life.addingInput().error?.code == .alreadyRunning)
    }

    @Test func appendingAfterMarkAsFinishedIsAMisuse() {
        var life = Self.writing()
        let r17 = life.appending(.video, inputFinished: true)
        #expect(r17.error?.message.contains("marked finished") == true)
    }

    @Test func theSessionEndsOnceAtOrAfterItsStart() {
        var early = Self.writing()
        let r18 = early.endSession(at: MediaTime(seconds: 9))
        #expect(r18.error?.code == .invalidConfiguration)
        #expect(early.end == nil)

        var life = Self.writing()
        let r19 = life.endSession(at: MediaTime(seconds: 10))
        #expect(r19 == .proceed, "an empty session is a session")
        let r20 = life.endSession(at: MediaTime(seconds: 12))
        #expect(r20.error?.message.contains("ended already") == true)
        #expect(life.end == MediaTime(seconds: 10))

        var unstarted = AssetWriterLifecycle(needsSession: true)
        _ = unstarted.startingToWrite()
        unstarted.opened()
        let r21 = unstarted.endSession(at: .zero)
        #expect(r21.error?.message.contains("before startSession") == true)

        var configured = AssetWriterLifecycle(needsSession: false)
        _ = configured.startingToWrite()
        configured.opened()
        let r22 = configured.endSession(at: MediaTime(seconds: 2))
        #expect(r22 == .proceed)
        #expect(configured.session == .ended(start: .zero, end: MediaTime(seconds: 2)))
    }

    @Test func cancellingAndFailingEndTheWriterOnce() {
        var cancelled = Self.writing()
        let r23 = cancelled.cancel()
        #expect(r23)
        #expect(cancelled.status == .cancelled && !cancelled.isActive)
        let r24 = cancelled.cancel()
        let r25 = cancelled.fail()
        #expect(!r24 && !r25)
        #expect(cancelled.status == .cancelled)
        let r26 = cancelled.appending(.video)
        let r27 = cancelled.finishing()
        #expect(r26 == .ignore && r27 == .ignore)

        var unstarted = AssetWriterLifecycle(needsSession: true)
        let r28 = unstarted.cancel()
        #expect(r28, "a writer that never wrote can be cancelled")

        var failed = Self.writing()
        let r29 = failed.fail()
        #expect(r29, "the file was open: the writer finishes what it can")
        let r30 = failed.fail()
        #expect(failed.status == .failed && !r30)

        var finishing = Self.writing()
        let r31 = finishing.finishing()
        #expect(r31 == .proceed)
        let r32 = finishing.fail()
        #expect(!r32, "failing while finishing: nothing more to finish")
        finishing.completed()
        #expect(finishing.status == .failed, "a failure while finishing is not a completion")
    }
}
