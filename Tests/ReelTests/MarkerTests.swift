import Foundation
import Synchronization
import Testing
@testable import Reel
import ReelTestSupport

/// Chapter markers on a stepped manual clock: scheduled on the session timeline around pauses,
/// they must come out of ffprobe as chapters at the recorded times (pauses taken out), in a
/// single file, in clips merged at the stop, after a recovery of the clips, and after a merge.
@Suite struct MarkerTests {
    /// Recorded 0–1, 1.2–2.2, 2.4–3.4 s of the session, then stopped at 3 s recorded.
    static let intervals: [(Double, Double)] = [(0, 1), (1.2, 2.2), (2.4, 3.4)]
    /// Markers at these session times; the third falls in the second pause.
    static let markers: [(Double, String?)] = [(0.5, "intro"), (1.5, nil), (2.3, "über den Fluß"), (3.0, nil)]
    /// Where they land on the recorded timeline: 0.5; 1.0 + 0.3; the pause at 2.0; 2.0 + 0.6.
    static let expected: [(Double, String)] = [(0.5, "intro"), (1.3, "Chapter 2"), (2.0, "über den Fluß"), (2.6, "Chapter 4")]

    func record(_ mode: Recorder.PauseMode, ext: String, in dir: TemporaryDirectory,
                merges: Bool = true, video: Bool = true, marks: Bool = true,
                stoppedByHand: Bool = false, markers: [(Double, String?)] = Self.markers) async throws -> (URL, Recorder, [Chapter]) {
        let url = dir.url.appendingPathComponent("\(marks ? "marked" : "unmarked").\(ext)")
        let session = CaptureSession(clock: ManualClock())
        if video { try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120))) }
        try session.addInput(ToneSource())
        var settings = Recorder.Settings(pauseMode: mode)
        settings.video.preset = "ultrafast"
        // What each kind of file holds: VP9 in WebM, PCM in WAV, FLAC, Opus in Ogg.
        let container = try #require(Container(pathExtension: ext))
        settings.video.codec = container.defaultVideoCodec
        settings.audio.codec = container.defaultAudioCodec
        settings.mergesClipsAtEnd = merges
        let recorder = Recorder(url: url, settings: settings)
        for (i, (start, end)) in Self.intervals.enumerated() {
            if i > 0 { recorder.record(at: MediaTime(seconds: start)) }
            recorder.pause(at: MediaTime(seconds: end))
        }
        // (Stopped by hand, it stays paused from 3.4 s on: the same recording whenever the stop comes.)
        if !stoppedByHand { recorder.record(at: MediaTime(seconds: 5)) }
        // Stopped by hand in the pause after 3.4 s, the recording has no expected length (and
        // the index its largest reservation); else at 3 s recorded.
        if !stoppedByHand { recorder.maxRecordedDuration = MediaTime(seconds: 3) }
        for (time, title) in markers where marks { recorder.addMarker(title, at: MediaTime(seconds: time)) }
        let events = Task { () -> [Chapter] in
            var placed: [Chapter] = []
            for await event in recorder.events { if case .markerAdded(let chapter) = event { placed.append(chapter) } }
            return placed
        }
        try session.addOutput(recorder)
        try await session.start()
        if stoppedByHand {
            while (recorder.sessionTime ?? .zero) < MediaTime(seconds: 4) { try await Task.sleep(for: .milliseconds(5)) }
            await session.stop()
        }
        _ = try await recorder.result()
        await session.stop()
        return (url, recorder, await events.value)
    }

    func expectChapters(in url: URL, _ expected: [(Double, String)], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let chapters = try MediaProbe.chapters(url)
        #expect(chapters.map(\.title) == expected.map(\.1), sourceLocation: sourceLocation)
        for (found, wanted) in zip(chapters, expected) {
            #expect(abs(found.start - wanted.0) <= 1.0 / 30 + 0.0005, "\(found.title) at \(found.start), expected \(wanted.0) in \(chapters)",
                    sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: [("mp4", Recorder.PauseMode.singleFile), ("mov", .singleFile), ("mkv", .singleFile), ("webm", .singleFile),
                      ("mp4", .clips), ("mkv", .clips)])
    func markersBecomeChaptersAtTheirRecordedTimes(ext: String, mode: Recorder.PauseMode) async throws {
        let dir = try TemporaryDirectory()
        let (url, _, placed) = try await record(mode, ext: ext, in: dir)
        try expectChapters(in: url, Self.expected)
        #expect(placed.map(\.title) == Self.expected.map(\.1), "each marker is said as it is placed")
        // The file's streams are only the recording's: no chapter text track.
        #expect(try MediaProbe.probe(url).streams.count == 2)
    }

    /// Markers at one instant: two at one time, two in one pause (both land where it ends),
    /// two within a frame. Each such pair is one chapter with the titles given (an untitled
    /// one adds none), untitled ones numbered as the chapters are, without gaps. They were two
    /// chapters at one time: an MKV read by ffprobe lost the one with the content, an MP4's
    /// chapters overlapped.
    static let coincident: [(Double, String?)] = [(0.5, "A"), (0.5, "B"), (1.05, nil), (1.15, nil), (1.5, "C"), (1.51, nil), (2.3, nil)]
    static let coincidentChapters: [(Double, String)] = [(0.5, "A / B"), (1.0, "Chapter 2"), (1.3, "C"), (2.0, "Chapter 4")]

    @Test(arguments: [("mp4", Recorder.PauseMode.singleFile), ("mkv", .singleFile), ("mp4", .clips), ("mkv", .clips)])
    func markersAtOneInstantMakeOneChapter(ext: String, mode: Recorder.PauseMode) async throws {
        let dir = try TemporaryDirectory()
        let (url, recorder, placed) = try await record(mode, ext: ext, in: dir, merges: mode == .singleFile, markers: Self.coincident)
        let file = try mode == .singleFile ? url : RecordingSession.recover(folder: #require(recorder.clipsFolder), to: dir.url.appendingPathComponent("recovered.\(ext)")).url
        try expectChapters(in: file, Self.coincidentChapters)
        // Each marker is said as placed: one that joins a chapter says the chapter as it is now.
        #expect(placed.count == Self.coincident.count)
        let lastSaid = Dictionary(placed.map { ($0.start, $0.title) }, uniquingKeysWith: { $1 })
        #expect(lastSaid.sorted { $0.key < $1.key }.map(\.value) == Self.coincidentChapters.map(\.1))
        if mode == .clips {
            // Merged at the stop as well.
            let other = try TemporaryDirectory()
            let (merged, _, _) = try await record(mode, ext: ext, in: other, markers: Self.coincident)
            try expectChapters(in: merged, Self.coincidentChapters)
        } else {
            // A merge keeps them, and chapters it is given at one instant are joined too.
            let twice = dir.url.appendingPathComponent("twice.\(ext)")
            let added = [Chapter(start: MediaTime(seconds: 1.6), title: "D"), Chapter(start: MediaTime(seconds: 1.6), title: "E")]
            _ = try Merger.merge([MergeInput(url: url), MergeInput(url: url, chapters: added)], to: twice)
            let second = (Self.coincidentChapters + [(1.6, "D / E")]).map { ($0.0 + 3, $0.1) }.sorted { $0.0 < $1.0 }
            try expectChapters(in: twice, Self.coincidentChapters + second)
        }
    }

    /// Two markers in one pause, as `reel control` gives them: the first placed while paused,
    /// the second only after the resume asked for next has begun the next clip (the recorder
    /// took both requests before its next sample). Both are at the pause, one instant of the
    /// merged file, so one chapter. Placed in the clip their recorded time fell in (the end of
    /// the one, the start of the next), they were two chapters live: the event said "p2" alone
    /// and the next untitled chapter was numbered one too high (seen on CI; the merged file
    /// joined them). On a stepped clock, so the order is the same every run.
    @Test(arguments: [true, false])
    func twoMarkersInOnePauseMakeOneChapterWhateverTheResumeDid(merges: Bool) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("paused.mp4")
        let clock = ManualClock(mode: .stepped)
        let session = CaptureSession(clock: clock)
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        try session.addInput(ToneSource())
        var settings = Recorder.Settings(pauseMode: .clips)
        settings.video.preset = "ultrafast"
        settings.mergesClipsAtEnd = merges
        let recorder = Recorder(url: url, settings: settings)
        final class Placed: Sendable {
            private let list = Mutex<[Chapter]>([])
            func add(_ chapter: Chapter) { list.withLock { $0.append(chapter) } }
            var all: [Chapter] { list.withLock { $0 } }
        }
        let placed = Placed()
        let listening = Task { for await event in recorder.events { if case .markerAdded(let c) = event { placed.add(c) } } }
        try session.addOutput(recorder)
        try await session.start()
        func run(to seconds: Double, until condition: () -> Bool) async throws {
            clock.advance(to: MediaTime(seconds: seconds))
            let end = Date().addingTimeInterval(20)
            while !condition() && Date() < end { try await Task.sleep(for: .milliseconds(10)) }
            #expect(condition(), "at \(seconds) s: \(placed.all)")
        }
        try await run(to: 0.5) { (recorder.sessionTime ?? .zero) >= MediaTime(seconds: 0.45) }
        try recorder.addMarker("one")
        try await run(to: 1.0) { placed.all.count == 1 && (recorder.sessionTime ?? .zero) >= MediaTime(seconds: 0.95) }
        try recorder.pause()
        try await run(to: 1.2) { recorder.isPaused && (recorder.sessionTime ?? .zero) >= MediaTime(seconds: 1.15) }
        try recorder.addMarker("p1")
        try await run(to: 1.3) { placed.all.count == 2 }
        // Asked before the resume, but placed after it: the recorder's next sample takes both.
        try recorder.addMarker("p2")
        try recorder.record()
        try await run(to: 1.6) { placed.all.count == 3 && (recorder.sessionTime ?? .zero) >= MediaTime(seconds: 1.55) }
        try recorder.addMarker()
        try await run(to: 2.0) { placed.all.count == 4 }
        let ticking = Task {
            while !Task.isCancelled {
                clock.advance(by: MediaTime(value: 1, timescale: 30))
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        await session.stop()
        _ = try await recorder.result()
        ticking.cancel()
        listening.cancel()

        let said = placed.all
        #expect(said.map(\.title) == ["one", "p1", "p1 / p2", "Chapter 3"], "\(said)")
        #expect(said.count == 4 && said[1].start == said[2].start, "\(said)")
        let file = try merges ? url : RecordingSession.recover(folder: #require(recorder.clipsFolder), to: dir.url.appendingPathComponent("recovered.mp4")).url
        let chapters = try MediaProbe.chapters(file)
        #expect(chapters.map(\.title) == ["one", "p1 / p2", "Chapter 3"], "\(chapters)")
        if said.count == 4 {
            for (found, wanted) in zip(chapters, [said[0], said[2], said[3]]) {
                #expect(abs(found.start - wanted.start.seconds) <= 1.0 / 30 + 0.0005, "\(chapters) against \(said)")
            }
        }
    }

    /// Chapters do not keep the space reserved for the index: a short recording with markers,
    /// stopped by hand (its index's reservation sized for a long one), is made as compact as
    /// one without: no more free space than copying its media would cost (it kept about 2 MB
    /// of `free` box).
    @Test(arguments: ["mp4", "mov", "m4a"])
    func aFileWithChaptersIsAsCompactAsOneWithout(ext: String) async throws {
        let dir = try TemporaryDirectory()
        let (marked, _, _) = try await record(.singleFile, ext: ext, in: dir, video: ext != "m4a", stoppedByHand: true)
        let (unmarked, _, _) = try await record(.singleFile, ext: ext, in: dir, video: ext != "m4a", marks: false, stoppedByHand: true)
        let size = try #require(FileIdentity.size(of: marked))
        let free = try Self.freeBytes(marked)
        #expect(free <= max(4096, (size - free) / 2), "\(free) bytes of \(size) are free space")
        #expect(try Self.freeBytes(unmarked) <= 4096)
        #expect(try MediaProbe.chapters(marked).map(\.title) == Self.expected.map(\.1))
        #expect(try MediaProbe.probe(marked).streams.count == (ext == "m4a" ? 1 : 2), "no chapter text track")
    }

    /// The bytes of the top-level `free` boxes of the MP4/MOV at `url`.
    static func freeBytes(_ url: URL) throws -> Int64 {
        let data = try Data(contentsOf: url)
        var offset = 0, free: Int64 = 0
        while offset + 8 <= data.count {
            var size = Int64(data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) })
            if size == 1, offset + 16 <= data.count { size = Int64(data[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) }) }
            if size == 0 { size = Int64(data.count - offset) }
            guard size >= 8 else { break }
            if String(decoding: data[offset + 4..<offset + 8], as: UTF8.self) == "free" { free += size }
            offset += Int(size)
        }
        return free
    }

    @Test func markersOfClipsSurviveInTheManifestForARecovery() async throws {
        let dir = try TemporaryDirectory()
        let (url, recorder, _) = try await record(.clips, ext: "mp4", in: dir, merges: false)
        let folder = try #require(recorder.clipsFolder)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        let output = dir.url.appendingPathComponent("recovered.mp4")
        _ = try RecordingSession.recover(folder: folder, to: output)
        try expectChapters(in: output, Self.expected)
    }

    @Test(arguments: ["mp4", "mkv"])
    func aMergeKeepsEachFilesChaptersWhereTheFileBegins(ext: String) async throws {
        let dir = try TemporaryDirectory()
        let (url, _, _) = try await record(.singleFile, ext: ext, in: dir)
        let merged = dir.url.appendingPathComponent("twice.\(ext)")
        _ = try Merger.merge([MergeInput(url: url), MergeInput(url: url, chapters: [Chapter(start: MediaTime(seconds: 1), title: "added")])],
                             to: merged)
        let second = (Self.expected.map { ($0.0 + 3, $0.1) } + [(4.0, "added")]).sorted { $0.0 < $1.0 }
        try expectChapters(in: merged, Self.expected + second)
        #expect(try MediaProbe.probe(merged).streams.count == 2, "no chapter text track")
    }

    /// A clip's marker at or past the end of what the merge holds (placed just before a kill,
    /// after what the clip's recovery kept) is left out of the merged file and said
    /// (`MergeSummary.leftOutMarkers`); one inside stays. An MP4 got it as a chapter past its
    /// end (a black-box tester: a 4.90 s file with a chapter at 5.14 s, nothing said).
    @Test(arguments: ["mp4", "mkv"])
    func aMarkerPastTheMergedEndIsLeftOutAndSaid(ext: String) async throws {
        let dir = try TemporaryDirectory()
        let (url, _, _) = try await record(.singleFile, ext: ext, in: dir)
        let merged = dir.url.appendingPathComponent("late.\(ext)")
        let inside = Chapter(start: MediaTime(seconds: 1), title: "inside")
        let past = Chapter(start: MediaTime(seconds: 3.5), title: "past the end")
        let summary = try Merger.merge([MergeInput(url: url), MergeInput(url: url, chapters: [inside, past])], to: merged)
        let end = summary.duration.seconds
        #expect(summary.leftOutMarkers.map(\.title) == ["past the end"], "\(summary.leftOutMarkers) of a \(end) s file")
        let chapters = try MediaProbe.chapters(merged)
        #expect(chapters.allSatisfy { $0.start < end }, "\(chapters) in a \(end) s file")
        #expect(chapters.contains { $0.title == "inside" })
    }

    /// Sound files: M4A keeps markers; WAV, FLAC, Ogg and Opus cannot, and say so instead of
    /// saying a marker was placed.
    @Test(arguments: ["m4a", "wav", "flac", "ogg", "opus"])
    func soundFilesKeepMarkersOrSayTheyCannot(ext: String) async throws {
        let dir = try TemporaryDirectory()
        let (url, recorder, placed) = try await record(.singleFile, ext: ext, in: dir, video: false)
        if ext == "m4a" {
            try expectChapters(in: url, Self.expected)
            #expect(placed.count == Self.expected.count)
        } else {
            #expect(try MediaProbe.chapters(url).isEmpty)
            #expect(placed.isEmpty, "no marker is said to be placed in a .\(ext) file")
            #expect { try recorder.addMarker("now") } throws: {
                ($0 as? ReelError)?.code == .unsupportedFormat && "\($0)".contains("cannot hold chapter markers")
            }
        }
    }

    /// A marker is placed at its moment in the picture when the pictures reach the recorder
    /// later than the sound (a slow screen or camera, a loaded machine): here each frame comes
    /// only once half a second more of sound has. The chapters were put where the pictures had
    /// got to when the sound passed the marker, half a second early.
    @Test(arguments: ["mp4", "mkv"])
    func aMarkerWaitsForThePicturesThatComeLaterThanTheSound(ext: String) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("late pictures.\(ext)")
        let audio = LateChunkAudioSource(firstSample: .zero, chunk: MediaTime(seconds: 0.1), lateness: .zero)
        let video = DelayedVideoSource(start: .zero) { time in
            audio.deliveredUpTo.load(ordering: .acquiring) >= (time + MediaTime(seconds: 0.5)).convertedValue(to: 48_000)
        }
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(video)
        try session.addInput(audio)
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.maxRecordedDuration = MediaTime(seconds: 3)
        let recorder = Recorder(url: url, settings: settings)
        recorder.addMarker("one", at: MediaTime(seconds: 1))
        recorder.addMarker("two", at: MediaTime(seconds: 2))
        try session.addOutput(recorder)
        try await session.start()
        _ = try await recorder.result()
        await session.stop()
        try expectChapters(in: url, [(1.0, "one"), (2.0, "two")])
        // Where the pictures of those moments are: the burned-in counter of the frame shown at each chapter.
        let chapters = try MediaProbe.chapters(url)
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        let first = try #require(counters.first ?? nil)
        for chapter in chapters {
            let index = Int((chapter.start * 30).rounded())
            #expect(counters.indices.contains(index) && counters[index].map { $0 - first } == Int64(index),
                    "\(chapter.title) at \(chapter.start): frame \(index) of \(counters.count) shows \(String(describing: counters.indices.contains(index) ? counters[index] : nil))")
        }
    }

    /// The list of markers beside a name (kept for a recovery) belongs to one recording: one
    /// left by an earlier recording there (killed, its file then deleted or overwritten) is
    /// gone once a new recording is made at the name, so a recovery of the new one never takes
    /// those markers for its own (it did: the list stayed until the new one placed a marker).
    @Test(arguments: [false, true])
    func aListOfMarkersLeftBesideTheNameGoesWithANewRecording(overwriting: Bool) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("unmarked.mp4")
        let list = dir.url.appendingPathComponent(".unmarked.mp4.chapters")
        if overwriting { try Data("an earlier recording".utf8).write(to: url) }
        try Data(#"[{"microseconds":500000,"title":"earlier"}]"#.utf8).write(to: list)
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        settings.overwrite = overwriting
        let recorder = Recorder(url: url, settings: settings)
        recorder.maxRecordedDuration = MediaTime(seconds: 2)
        try session.addOutput(recorder)
        try await session.start()
        _ = try await recorder.result()
        await session.stop()
        #expect(!FileManager.default.fileExists(atPath: list.path))
        #expect(try MediaProbe.chapters(url).isEmpty)
    }

    @Test func aGIFOrARecorderWithoutAFileHasNoPlaceForAMarker() throws {
        #expect { try Recorder(url: URL(fileURLWithPath: "/tmp/never.gif")).addMarker() } throws: {
            ($0 as? ReelError)?.code == .unsupportedFormat
        }
        let replay = Recorder(replayBuffer: try ReplayBuffer(duration: MediaTime(seconds: 5)))
        #expect { try replay.addMarker() } throws: { ($0 as? ReelError)?.code == .unsupportedFormat }
    }

    /// A resume scheduled ahead (a delayed start) is said when the session reaches it, not
    /// when it is taken: here after a marker placed at a second, while still waiting for 2 s
    /// (it was said at once, before the marker, and `reel record --delay` took its wait for over).
    @Test func aScheduledResumeIsSaidWhenItHappens() async throws {
        let dir = try TemporaryDirectory()
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: dir.url.appendingPathComponent("delayed.mp4"), settings: settings)
        recorder.pause(at: .zero)
        recorder.record(at: MediaTime(seconds: 2))
        recorder.addMarker("while waiting", at: MediaTime(seconds: 1))
        recorder.maxRecordedDuration = MediaTime(seconds: 1)
        let events = Task { () -> [String] in
            var said: [String] = []
            for await event in recorder.events {
                switch event {
                case .paused: said.append("paused")
                case .resumed: said.append("resumed")
                case .markerAdded: said.append("marker")
                default: break
                }
            }
            return said
        }
        try session.addOutput(recorder)
        try await session.start()
        _ = try await recorder.result()
        await session.stop()
        #expect(await events.value == ["paused", "marker", "resumed"])
    }

    @Test func aMarkerNeedsARecording() throws {
        let recorder = Recorder(url: URL(fileURLWithPath: "/tmp/never.mp4"))
        #expect(throws: ReelError.self) { try recorder.addMarker("too early") }
    }

    /// Records until stopped, while `act` runs on the recorder once it has recorded half a second.
    func recordWhile(_ url: URL, _ act: (Recorder) async throws -> Void) async throws {
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let container = try #require(Container(pathExtension: url.pathExtension))
        settings.video.codec = container.defaultVideoCodec
        let recorder = Recorder(url: url, settings: settings)
        try session.addOutput(recorder)
        try await session.start()
        while (recorder.sessionTime ?? .zero) < MediaTime(seconds: 0.5) || !recorder.isRecording { try await Task.sleep(for: .milliseconds(5)) }
        do { try await act(recorder) } catch {
            await session.stop()
            throw error
        }
        await session.stop()
        _ = try await recorder.result()
    }

    /// An MP4's chapter list holds 255 chapters: the 256th marker is refused (it was answered
    /// as placed, and silently lost); an MKV keeps them all. A title longer than a chapter keeps
    /// is refused, not cut silently.
    @Test(arguments: ["mp4", "mkv"])
    func markersPastWhatTheFileHoldsAreRefused(ext: String) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("many.\(ext)")
        try await recordWhile(url) { recorder async throws in
            #expect { try recorder.addMarker(String(repeating: "y", count: Chapter.maximumTitleBytes + 1)) } throws: {
                ($0 as? ReelError)?.code == .invalidConfiguration
            }
            try recorder.addMarker(String(repeating: "é", count: Chapter.maximumTitleBytes / 2))
            // A frame apart: markers at one instant make chapters of no length, which MKV leaves out.
            func nextFrame() async throws {
                let now = recorder.sessionTime ?? .zero
                while (recorder.sessionTime ?? .zero) < now + MediaTime(seconds: 0.05) { try await Task.sleep(for: .milliseconds(1)) }
            }
            for i in 1..<255 {
                try await nextFrame()
                try recorder.addMarker("m\(i)")
            }
            try await nextFrame()
            if ext == "mp4" {
                #expect { try recorder.addMarker("one too many") } throws: { ($0 as? ReelError)?.code == .limitReached }
            } else {
                try recorder.addMarker("m255")
            }
        }
        let chapters = try MediaProbe.chapters(url)
        #expect(chapters.count == (ext == "mp4" ? 255 : 256))
        #expect(chapters.first?.title == String(repeating: "é", count: Chapter.maximumTitleBytes / 2))
    }

    /// A title with a control character is refused with what and where (a NUL cut the title
    /// short in an MP4: "A\u{0}B" became "A"), in MP4 and MKV alike; one scheduled by time has
    /// spaces for them.
    @Test(arguments: ["mp4", "mkv"])
    func aTitleWithAControlCharacterIsRefused(ext: String) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("titles.\(ext)")
        try await recordWhile(url) { recorder async throws in
            for title in ["A\u{0}B", "A\nB", "A\tB", "A\u{1B}[31mB"] {
                let error = #expect(throws: ReelError.self) { try recorder.addMarker(title) }
                #expect(error?.code == .invalidConfiguration && error?.message.contains("control character") == true, "\(String(describing: error))")
            }
            try recorder.addMarker("A B")
            recorder.addMarker("C\u{0}D", at: (recorder.sessionTime ?? .zero) + MediaTime(seconds: 0.1))
            let end = (recorder.sessionTime ?? .zero) + MediaTime(seconds: 0.3)
            while (recorder.sessionTime ?? .zero) < end { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(try MediaProbe.chapters(url).map(\.title) == ["A B", "C D"])
    }

    /// A recording stopped before its scheduled start writes nothing: a marker placed while it
    /// waited leaves no list of markers behind either (`.NAME.chapters` stayed).
    @Test func aStopBeforeTheStartLeavesNoListOfMarkers() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("never.mp4")
        let session = CaptureSession(clock: ManualClock())
        try session.addInput(TestPatternSource(size: PixelSize(width: 160, height: 120)))
        var settings = Recorder.Settings()
        settings.video.preset = "ultrafast"
        let recorder = Recorder(url: url, settings: settings)
        recorder.pause(at: .zero)
        recorder.record(at: MediaTime(seconds: 3600))
        recorder.addMarker("while waiting", at: MediaTime(seconds: 0.5))
        let placed = Task { () -> Bool in
            for await event in recorder.events { if case .markerAdded = event { return true } }
            return false
        }
        try session.addOutput(recorder)
        try await session.start()
        while (recorder.sessionTime ?? .zero) < MediaTime(seconds: 2) { try await Task.sleep(for: .milliseconds(5)) }
        await session.stop()
        _ = try? await recorder.result()
        #expect(await placed.value, "the marker was placed while waiting (its list written)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent(".never.mp4.chapters").path))
    }
}
