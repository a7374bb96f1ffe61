import Foundation
import Reel

/// `--delay`, `--start-at` and `--stop-at`: when `reel record` begins and ends recording.
///
/// The sources are opened and the session runs from the start; the recorder starts paused and
/// resumes at the start time on the session timeline (``Recorder/record(at:)``), so the first
/// frame is on time whatever a camera takes to open, and the schedule holds on a manual clock as
/// on the real one. The stop is a pause scheduled on the same timeline (nothing after it is
/// recorded), and the session is stopped once its clock has passed it. A stop before the start
/// ends cleanly with nothing written.
public struct RecordSchedule: Sendable, Equatable {
    /// Session time at which recording begins (`nil`: at once).
    public var start: MediaTime?
    /// Session time at which recording ends (`nil`: when stopped or at a limit).
    public var stop: MediaTime?

    public init(start: MediaTime? = nil, stop: MediaTime? = nil) {
        self.start = start
        self.stop = stop
    }

    /// Reads the options; `now` is the wall-clock time the session starts at (about).
    /// `calendar` is read only for `--start-at`/`--stop-at`: the current calendar loads the
    /// time-zone and locale data (ICU's tables, a few MiB of memory) that no other recording needs.
    init(_ args: ParsedArguments, now: Date, calendar: @autoclosure () -> Calendar = .current) throws {
        if args.has("delay") && args.has("start-at") { throw UsageError("--delay and --start-at both say when to begin; give one") }
        if args.has("delay") {
            let delay = try ValueParser.duration(args.value("delay")!, option: "delay", allowsZero: true).seconds
            start = delay > 0 ? MediaTime(seconds: delay) : nil
        }
        if let text = args.value("start-at") ?? nil {
            start = MediaTime(seconds: try Self.seconds(until: text, option: "start-at", from: now, calendar: calendar()))
        }
        if let text = args.value("stop-at") ?? nil {
            let at = try Self.seconds(until: text, option: "stop-at", from: now, calendar: calendar())
            if let start, MediaTime(seconds: at) <= start {
                throw UsageError("--stop-at \(text) is not after the recording begins")
            }
            stop = MediaTime(seconds: at)
        }
    }

    /// Seconds from `now` until `text` (`HH:MM`, `HH:MM:SS` today, or `YYYY-MM-DD HH:MM[:SS]`),
    /// in local time; a time that has passed is refused.
    static func seconds(until text: String, option: String, from now: Date, calendar: Calendar = .current) throws -> Double {
        let parts = text.split(separator: " ")
        var day = calendar.dateComponents([.year, .month, .day], from: now)
        var clock = Substring(text)
        if parts.count == 2 {
            let date = parts[0].split(separator: "-").compactMap { Int($0) }
            guard date.count == 3 else { throw UsageError("--\(option) \(text): the date must be YYYY-MM-DD") }
            (day.year, day.month, day.day) = (date[0], date[1], date[2])
            clock = parts[1]
        } else if parts.count != 1 {
            throw UsageError("--\(option) \(text): give HH:MM, HH:MM:SS or YYYY-MM-DD HH:MM")
        }
        let fields = clock.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
        guard (2...3).contains(fields.count), fields.allSatisfy({ $0 != nil }), let hour = fields[0], let minute = fields[1],
              (0..<24).contains(hour), (0..<60).contains(minute), (0..<60).contains(fields.count == 3 ? fields[2]! : 0) else {
            throw UsageError("--\(option) \(text): give HH:MM, HH:MM:SS or YYYY-MM-DD HH:MM (24-hour local time)")
        }
        day.hour = hour
        day.minute = minute
        day.second = fields.count == 3 ? fields[2]! : 0
        // A month of 13 rolls over into the next year as a day of 32 would into the next month.
        guard (1...12).contains(day.month ?? 0), let when = calendar.date(from: day), calendar.component(.day, from: when) == day.day else {
            throw UsageError("--\(option) \(text): no such date")
        }
        let seconds = when.timeIntervalSince(now)
        guard seconds > 0 else {
            throw UsageError("--\(option) \(text) has passed" + (parts.count == 1 ? "; for another day give the date: YYYY-MM-DD \(text)" : ""))
        }
        // As --delay: a recording scheduled further ahead is a typo (and a time that far
        // overflows the session's clock).
        guard seconds <= 7 * 24 * 3600 else {
            throw UsageError("--\(option) \(text) is more than a week ahead")
        }
        return seconds
    }

    /// Whether anything is scheduled.
    var isScheduled: Bool { start != nil || stop != nil }

    /// Schedules the start and stop on `recorder`'s timeline (before the session starts).
    func apply(to recorder: Recorder) {
        if let start {
            recorder.pause(at: .zero)
            recorder.record(at: start)
        }
        if let stop { recorder.pause(at: stop) }
    }

    /// Calls `stop` once the session clock passes the scheduled stop (the pause scheduled there
    /// has already kept everything after it out of the file); `nil` without a stop.
    func watchStop(_ recorder: Recorder, stop: @escaping @Sendable () -> Void) -> Task<Void, Never>? {
        guard let end = self.stop else { return nil }
        return Task {
            while !Task.isCancelled {
                if let now = recorder.sessionTime, now >= end { return stop() }
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// Seconds left before the scheduled start at session time `now` (`nil`: nothing to wait
    /// for, or the start has come).
    func secondsToStart(at now: MediaTime?) -> Double? {
        guard let start else { return nil }
        let left = (start - (now ?? .zero)).seconds
        return left > 0 ? left : nil
    }

    /// The countdown's words: "Recording begins in 5 s" (or in H:MM:SS).
    static func countdownText(_ left: Double) -> String {
        "Recording begins in " + timeLeft(left)
    }

    /// `left` seconds in whole seconds up: "5 s", or "1:02:03" from an hour.
    static func timeLeft(_ left: Double) -> String {
        let whole = Int(left.rounded(.up))
        return whole >= 3600 ? Format.clock(seconds: Double(whole)) : "\(whole) s"
    }

    /// Counts down to the start: `tick` hears the seconds left four times a second until
    /// `recorder` reaches the start (or the task is cancelled), then `done` once; `nil` when
    /// there is no start to wait for.
    func countdown(_ recorder: Recorder, tick: @escaping @Sendable (Double) -> Void,
                   done: @escaping @Sendable () -> Void) -> Task<Void, Never>? {
        guard start != nil else { return nil }
        return Task {
            while !Task.isCancelled, let left = secondsToStart(at: recorder.sessionTime) {
                tick(left)
                try? await Task.sleep(for: .milliseconds(250))
            }
            done()
        }
    }
}
