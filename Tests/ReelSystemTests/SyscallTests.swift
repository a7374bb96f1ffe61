#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import ReelCore
import ReelSystem

@Suite("Syscall funnel")
struct SyscallTests {
    @Test("errno becomes a ReelError with the code, errno and message")
    func errors() throws {
        let error = #expect(throws: ReelError.self) {
            try Syscall.call("opening /nonexistent/video0") { open("/nonexistent/video0", O_RDWR) }
        }
        #expect(error?.code == .sourceUnavailable)
        #expect(error?.errno == ENOENT)
        #expect(error?.message == "opening /nonexistent/video0 failed: No such file or directory")

        #expect(Syscall.error("x", errno: EACCES).code == .permissionDenied)
        #expect(Syscall.error("x", errno: EPERM).code == .permissionDenied)
        #expect(Syscall.error("x", errno: EBUSY).code == .busy)
        #expect(Syscall.error("x", errno: ENODEV).code == .sourceUnavailable)
        #expect(Syscall.error("x", errno: ENOSPC).code == .insufficientStorage)
        #expect(Syscall.error("x", errno: EIO).code == .ioFailure)
        #expect(Syscall.error("x", errno: EACCES, hint: "add your user to the video group").hint
                == "add your user to the video group")
    }

    @Test("EINTR is retried; success passes the result through")
    func retries() throws {
        var attempts = 0
        let result = try Syscall.call("flaky") { () -> Int32 in
            attempts += 1
            if attempts < 3 { errno = EINTR; return -1 }
            return 42
        }
        #expect(result == 42)
        #expect(attempts == 3)

        let fd = try Syscall.call("opening /dev/null") { open("/dev/null", O_RDONLY) }
        try Syscall.call("closing /dev/null") { close(fd) }
        let bad = #expect(throws: ReelError.self) { try Syscall.call("closing fd -1") { close(-1) } }
        #expect(bad?.errno == EBADF)
        #expect(bad?.code == .ioFailure)

        let attach = #expect(throws: ReelError.self) {
            try Syscall.pointer("attaching segment -1") { shmat(-1, nil, 0) }
        }
        #expect(attach?.errno == EINVAL)
        #expect(attach?.message.hasPrefix("attaching segment -1 failed: ") == true)
    }
}

@Suite("Host clock")
struct HostClockTests {
    @Test("the host clock moves forward, and a deadline that has passed returns at once")
    func monotonic() {
        let clock = HostClock()
        let a = clock.now()
        clock.sleep(until: a + MediaTime(value: 1, timescale: 1000))
        let b = clock.now()
        #expect(b >= a + MediaTime(value: 1, timescale: 1000))
        clock.sleep(until: MediaTime(seconds: -1))
        clock.sleep(until: .zero)
        #expect(clock.now() >= b)
        #expect(clock.isRealTime)
    }
}
