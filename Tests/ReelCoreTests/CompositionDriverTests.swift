import Testing
import ReelCore

@Suite struct CompositionDriverTests {
    let camera = SourceID(0), screen = SourceID(1), slow = SourceID(2)
    let rate = FrameRate(30)

    func t(_ frame: Int64) -> MediaTime { rate.time(ofFrame: frame) }

    @Test func theFirstSourceThatKeepsUpDrives() {
        // 29.97 fps keeps up with 30 (keepsUpFraction); 10 fps does not.
        let driver = CompositionDriver(sources: [(slow, 10), (camera, 29.97), (screen, 30)], outputRate: rate)
        #expect(driver.driver == camera)
        let slowOnly = CompositionDriver(sources: [(slow, 10), (SourceID(3), 15)], outputRate: rate)
        #expect(slowOnly.driver == SourceID(3), "none keeps up: the fastest drives")
    }

    @Test func swappingThePicturesDoesNotChangeTheDriver() {
        var driver = CompositionDriver(sources: [(camera, 30), (screen, 30)], outputRate: rate)
        driver.order.swapAt(0, 1)
        do {
            let result = driver.frameArrived(from: camera, at: t(0))
            #expect(result)
        }
        do {
            let result = driver.frameArrived(from: screen, at: t(0))
            #expect(!result)
        }
        #expect(driver.driver == camera)
    }

    @Test func aDriverThatGoesQuietHandsOverAfterThreeFrameTimes() {
        var driver = CompositionDriver(sources: [(camera, 30), (screen, 30)], outputRate: rate)
        do {
            let result = driver.frameArrived(from: camera, at: t(10))
            #expect(result)
        }
        do {
            let result = driver.frameArrived(from: screen, at: t(13))
            #expect(!result, "three frame times quiet is still the driver")
        }
        do {
            let result = driver.frameArrived(from: screen, at: t(14))
            #expect(result, "more than three: the screen takes over")
        }
        #expect(driver.driver == screen)
        do {
            let result = driver.frameArrived(from: camera, at: t(15))
            #expect(!result, "the camera is back but does not take over again")
        }
    }

    @Test func outagesOfTheComposedStream() {
        var driver = CompositionDriver(sources: [(camera, 30), (screen, 30)], outputRate: rate)
        do {
            let result = driver.source(camera, became: .interrupted)
            #expect(result == nil, "the screen is still live")
        }
        #expect(driver.driver == screen)
        do {
            let result = driver.source(screen, became: .gone)
            #expect(result == .interrupted, "none live, the camera may come back")
        }
        #expect(driver.driver == nil)
        do {
            let result = driver.source(camera, became: .gone)
            #expect(result == .lost)
        }
        do {
            let result = driver.frameArrived(from: camera, at: t(40))
            #expect(result, "a source that comes back drives")
        }
        do {
            let result = driver.source(camera, became: .live)
            #expect(result == CompositionDriver.Outage.none)
        }
        do {
            let result = driver.source(SourceID(9), became: .gone)
            #expect(result == nil, "not a composed source")
        }
    }

    @Test func aComposedFrameWaitsOnlyForLiveSourcesThatKeepUp() {
        var driver = CompositionDriver(sources: [(camera, 30), (screen, 30), (slow, 10)], outputRate: rate)
        #expect(!driver.hasFrames(upTo: t(5)), "nothing has arrived")
        _ = driver.frameArrived(from: camera, at: t(5))
        #expect(!driver.hasFrames(upTo: t(5)), "the screen's frame is missing; the slow source is not waited for")
        _ = driver.frameArrived(from: screen, at: t(5))
        #expect(driver.hasFrames(upTo: t(5)))
        _ = driver.frameArrived(from: camera, at: t(10))
        #expect(driver.hasFrames(upTo: t(10)), "the screen quiet for more than three frames is not waited for")
        #expect(!driver.hasFrames(upTo: t(8)), "quiet for three frames: still waited for")
        _ = driver.source(screen, became: .interrupted)
        #expect(driver.hasFrames(upTo: t(8)), "an interrupted source is not waited for")
    }
}

@Suite struct CompositorStateMachineTests {
    @Test func lifecycle() throws {
        var machine = CompositorStateMachine()
        #expect(machine.isConfigurable && !machine.waitsForSources)
        try machine.prepare()
        #expect(!machine.isConfigurable)
        #expect { try machine.prepare() } throws: { ($0 as? ReelError)?.code == .alreadyRunning }
        machine.preparationFailed()
        #expect(machine.isConfigurable, "a failed preparation can be tried again")
        try machine.prepare()
        machine.prepared()
        #expect(machine.waitsForSources)
        machine.sessionWillStop()
        #expect(machine.phase == .stopping && !machine.waitsForSources && !machine.isConfigurable)
        machine.finished()
        #expect(machine.isConfigurable)
        try machine.prepare()
    }
}
