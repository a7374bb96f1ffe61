import Testing

extension Tag {
    /// Tests that record in real time, start a real server (Xvfb, PulseAudio, PipeWire, a
    /// streaming or camera server, a browser) or run the `reel` binary: `scripts/test` runs them
    /// one at a time after the quick tier, which runs everything else in parallel;
    /// `scripts/test --quick` leaves them out. Put it on the suite (`@Suite(.tags(.realTime))`);
    /// `scripts/test-tiers` finds the suites that carry it.
    @Tag public static var realTime: Self
}
