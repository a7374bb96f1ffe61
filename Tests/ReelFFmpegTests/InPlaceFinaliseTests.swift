import Foundation
import Testing
import ReelCore
@testable import ReelFFmpeg
import ReelTestSupport

/// Recordings finalised in place: the index written into the space reserved at the front, the
/// fragment headers blanked, the media data left where it was. Checked from the outside: the
/// top-level boxes (parsed here), ffprobe, the test pattern's frame counters, beeps against
/// flashes, and the same recording finalised by copying for the timestamps.
@Suite(.serialized) struct InPlaceFinaliseTests {
    static let size = PixelSize(width: 320, height: 240)
    static let rate = FrameRate(30)

    /// A writer of the test pattern (flashing at each beep) and the tone.
    static func writer(_ url: URL, container: Container? = nil, preset: String = "veryfast", audio: Bool = true,
                       configure: (inout AssetWriter.Configuration) -> Void = { _ in }) throws -> AssetWriter {
        var video = VideoSettings(codec: .h264, frameRate: rate)
        video.preset = preset
        let track = AssetWriter.AudioTrack(settings: AudioSettings(codec: .aac), inputFormat: AudioFormat(), title: "Tone")
        var configuration = AssetWriter.Configuration(url: url, container: container,
                                                      video: AssetWriter.VideoTrack(settings: video, inputFormat: .yuv420p, inputSize: size),
                                                      audio: audio ? [track] : [])
        configure(&configuration)
        return try AssetWriter(configuration: configuration)
    }

    /// Appends `frames` frames and their tone.
    static func feed(_ writer: AssetWriter, frames: Int) throws {
        let pool = FramePool(format: .yuv420p, size: size, capacity: 2)
        let tone = ToneSource()
        let beeps = BeepSchedule()
        for i in 0..<frames {
            let time = rate.time(ofFrame: Int64(i))
            let frame = pool.makeFrame()!
            try TestPattern.draw(index: Int64(i), flash: beeps.isBeeping(at: time), into: frame)
            try writer.appendVideo(frame, at: time)
            guard !writer.configuration.audio.isEmpty else { continue }
            var samples: [Float] = []
            samples.reserveCapacity(3200)
            for n in (i * 1600)..<((i + 1) * 1600) { let v = tone.value(atSample: Int64(n)); samples += [v, v] }
            try writer.appendAudio(AudioBuffer(format: AudioFormat(), presentationTime: MediaTime(value: Int64(i * 1600), timescale: 48_000),
                                               data: samples.withUnsafeBytes { Array($0) }), track: 0)
        }
    }

    // MARK: Looking at the file

    struct TopBox { var type: String; var offset: Int64; var size: Int64 }

    /// The top-level boxes of `url`, parsed here.
    static func topLevelBoxes(_ url: URL) throws -> [TopBox] {
        let data = try Data(contentsOf: url)
        var boxes: [TopBox] = []
        var offset = 0
        while offset + 8 <= data.count {
            var size = Int64(data[offset..<(offset + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            let type = String(decoding: data[(offset + 4)..<(offset + 8)], as: UTF8.self)
            if size == 1 { size = Int64(data[(offset + 8)..<(offset + 16)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) }
            if size == 0 { size = Int64(data.count - offset) }
            #expect(size >= 8 && offset + Int(size) <= data.count, "\(type) at \(offset) runs past the end")
            boxes.append(TopBox(type: type, offset: Int64(offset), size: size))
            guard size >= 8 else { break }
            offset += Int(size)
        }
        return boxes
    }

    /// The types of the boxes directly inside the `moov` of `url`.
    static func movieChildren(_ url: URL) throws -> [String] {
        let data = try Data(contentsOf: url)
        guard let moov = try topLevelBoxes(url).first(where: { $0.type == "moov" }) else { return [] }
        var types: [String] = []
        var offset = Int(moov.offset) + 8
        while offset + 8 <= Int(moov.offset + moov.size) {
            let size = Int(data[offset..<(offset + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            types.append(String(decoding: data[(offset + 4)..<(offset + 8)], as: UTF8.self))
            guard size >= 8 else { break }
            offset += size
        }
        return types
    }

    /// Expects a regular MP4/MOV: `ftyp`, one `moov` without `mvex` before the first `mdat`,
    /// and otherwise only `free` and `mdat` boxes.
    static func expectRegular(_ url: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let boxes = try topLevelBoxes(url)
        let types = boxes.map(\.type)
        #expect(types.first == "ftyp", sourceLocation: sourceLocation)
        #expect(types.filter { $0 == "moov" }.count == 1, "\(types)", sourceLocation: sourceLocation)
        #expect(Set(types).isSubset(of: ["ftyp", "moov", "free", "mdat", "wide"]), "\(Set(types))", sourceLocation: sourceLocation)
        let moov = types.firstIndex(of: "moov") ?? .max
        let mdat = types.firstIndex(of: "mdat") ?? .max
        #expect(moov < mdat, "the index comes before the media data", sourceLocation: sourceLocation)
        #expect(!(try movieChildren(url)).contains("mvex"), sourceLocation: sourceLocation)
        let probe = try Subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=id,start_time", "-of", "csv=p=0", url.path])
        let lines = probe.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, sourceLocation: sourceLocation)
        for (i, line) in lines.enumerated() {
            // Tracks numbered from 1, starting at zero.
            #expect(line == "0x\(i + 1),0.000000", "\(line)", sourceLocation: sourceLocation)
        }
    }

    /// Presentation and decoding times of every packet of `stream`, in file order.
    static func packetTimes(_ url: URL, stream: String) throws -> [String] {
        let r = try Subprocess.run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries", "packet=pts_time,dts_time",
                                    "-of", "csv=p=0", url.path])
        return r.output.split(separator: "\n").map(String.init)
    }

    static func inode(_ url: URL) -> UInt64 {
        var s = stat()
        return stat(url.path, &s) == 0 ? UInt64(s.st_ino) : 0
    }

    /// A digest of the payloads of the `mdat` boxes.
    static func mediaDigest(_ url: URL) throws -> [Int] {
        let data = try Data(contentsOf: url)
        return try topLevelBoxes(url).filter { $0.type == "mdat" }.map { box in
            var hasher = Hasher()
            hasher.combine(data[Int(box.offset + 8)..<Int(box.offset + box.size)])
            return hasher.finalize()
        }
    }

    // MARK: Tests

    @Test(arguments: [Container.mp4, .mov])
    func aCleanStopFinalisesInPlace(_ container: Container) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("inplace.\(container.fileExtension)")
        let writer = try Self.writer(url, container: container) { $0.expectedDuration = MediaTime(value: 3, timescale: 1) }
        let node = Self.inode(url)
        try Self.feed(writer, frames: 90)
        let summary = try writer.finish()
        #expect(summary.finalisation.isInPlace, "\(summary.finalisation)")
        // The index and a few bytes per fragment; no media data, and the same file.
        #expect(summary.finalisation.bytesWritten < 32 * 1024 && summary.finalisation.bytesWritten * 20 < summary.bytes,
                "\(summary.finalisation.bytesWritten) of \(summary.bytes) bytes written to finalise")
        #expect(Self.inode(url) == node, "finalised where it lies, not replaced by a copy")

        try Self.expectRegular(url)
        let probe = try MediaProbe.probe(url)
        #expect(probe.videoStreams.first?.frameCount == 90)
        #expect(abs((probe.videoStreams.first?.duration ?? 0) - 3.0) < 0.001)
        #expect(abs((probe.audioStreams.first?.duration ?? 0) - 3.0) < 0.025)
        #expect(probe.audioStreams.first?.title == "Tone")
        #expect(abs(probe.duration - 3.0) < 0.025)
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters == (0..<90).map { Int64($0) })
        try MergedFile.expectInSync(url, expected: ClipMaker.beepTimes([90]))
        let audioStart = try MediaProbe.packetTimes(url, stream: "a:0").first ?? 1
        #expect(audioStart < 0, "priming sits before zero, hidden by the edit list")

        // The same recording finalised by copying has the same timestamps (B-frames and all).
        let copied = dir.url.appendingPathComponent("copied.\(container.fileExtension)")
        let other = try Self.writer(copied, container: container) { $0.indexReservation = 0 }
        try Self.feed(other, frames: 90)
        let copySummary = try other.finish()
        #expect(copySummary.finalisation == .copied(reason: "no space was reserved for the index", bytesWritten: copySummary.bytes))
        let video = try Self.packetTimes(url, stream: "v:0")
        #expect(video == (try Self.packetTimes(copied, stream: "v:0")))
        #expect(Set(video.map { $0.split(separator: ",")[0] }).count == 90)
        let decodeOrder = video.map { Double($0.split(separator: ",")[0])! }
        #expect(decodeOrder != decodeOrder.sorted(), "the encoder used B-frames, so presentation order differs from decode order")
        #expect(try Self.packetTimes(url, stream: "a:0") == (try Self.packetTimes(copied, stream: "a:0")))
    }

    @Test func anAudioOnlyRecordingFinalisesInPlace() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("audio.m4a.mp4")
        let config = AssetWriter.Configuration(url: url, video: nil,
                                               audio: [AssetWriter.AudioTrack(settings: AudioSettings(), inputFormat: AudioFormat())],
                                               indexReservation: 8192)
        let writer = try AssetWriter(configuration: config)
        let tone = ToneSource()
        for i in 0..<200 {
            var samples: [Float] = []
            for n in (i * 480)..<((i + 1) * 480) { let v = tone.value(atSample: Int64(n)); samples += [v, v] }
            try writer.appendAudio(AudioBuffer(format: AudioFormat(), presentationTime: MediaTime(value: Int64(i * 480), timescale: 48_000),
                                               data: samples.withUnsafeBytes { Array($0) }), track: 0)
        }
        let summary = try writer.finish()
        #expect(summary.finalisation.isInPlace, "\(summary.finalisation)")
        let types = try Self.topLevelBoxes(url).map(\.type)
        #expect(!types.contains("moof") && types.contains("moov"))
        let probe = try MediaProbe.probe(url)
        #expect(abs((probe.audioStreams.first?.duration ?? 0) - 2.0) < 0.025)
        let beeps = MediaProbe.beepOnsets(try MediaProbe.decodeAudio(url))
        #expect(beeps.count == 2 && abs(beeps[0] - 0.5) < 0.01, "beeps at \(beeps)")
    }

    @Test func aLongerRecordingThanPlannedIsCopied() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("long.mp4")
        let writer = try Self.writer(url, preset: "ultrafast") { $0.expectedDuration = MediaTime(value: 1, timescale: 1) }
        try Self.feed(writer, frames: 600)
        let summary = try writer.finish()
        guard case .copied(let reason, _) = summary.finalisation else {
            Issue.record("finalised \(summary.finalisation)")
            return
        }
        #expect(reason.contains("reserved"), "\(reason)")
        #expect(!(try Self.topLevelBoxes(url)).contains { $0.type == "moof" })
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters == (0..<600).map { Int64($0) })
        #expect(abs((try MediaProbe.probe(url).videoStreams.first?.duration ?? 0) - 20.0) < 0.001)
    }

    @Test func aSmallRecordingIsCopiedRatherThanKeepingAnHoursReservation() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("small.mp4")
        let writer = try Self.writer(url, preset: "ultrafast")
        try Self.feed(writer, frames: 15)
        let summary = try writer.finish()
        guard case .copied(let reason, let bytes) = summary.finalisation else {
            Issue.record("finalised \(summary.finalisation)")
            return
        }
        #expect(reason.contains("small"), "\(reason)")
        #expect(bytes == summary.bytes)
        try Self.expectRegular(url)
        #expect(summary.bytes < 256 * 1024, "no hour's worth of reservation left in a half-second file")
    }

    @Test func matroskaNeedsNoFinalising() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("plain.mkv")
        let writer = try AssetWriter(configuration: .init(
            url: url, video: AssetWriter.VideoTrack(settings: VideoSettings(codec: .h264, preset: "ultrafast"),
                                                    inputFormat: .yuv420p, inputSize: Self.size)))
        try Self.feed(writer, frames: 10)
        #expect(try writer.finish().finalisation == .notNeeded)
    }

    @Test func theReservationFitsTheExpectedRecording() {
        let hour = MP4Finaliser.reservation(duration: MediaTime(value: 3600, timescale: 1), frameRate: FrameRate(30),
                                            audioPacketRates: [48000.0 / 1024], fragmentInterval: MediaTime(value: 1, timescale: 2),
                                            keyframeInterval: 2, baseIndexSize: 1300)
        // An hour of 30 fps video with B-frames and AAC needs about 2 MB of sample tables.
        #expect(hour > 2_000_000 && hour < 4_000_000, "\(hour)")
        let huge = MP4Finaliser.reservation(duration: MediaTime(value: 100 * 3600, timescale: 1), frameRate: FrameRate(60),
                                            audioPacketRates: [48000.0 / 1024, 48000.0 / 1024], fragmentInterval: MediaTime(value: 1, timescale: 2),
                                            keyframeInterval: 2, baseIndexSize: 1300)
        #expect(huge == MP4Finaliser.maximumReservation)
    }

    /// The file renamed in the moment between the stop looking for it and finalising it (the
    /// first tenth of a second of a stop): it is looked for again and finalised at its new
    /// name (it was left fragmented, the stop failing with "cannot open" the old name).
    @Test func aFileRenamedAsTheFinaliseBeginsIsFinalisedAtItsNewName() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("stopping.mp4")
        let moved = dir.url.appendingPathComponent("tidied.mp4")
        let writer = try Self.writer(url) { $0.expectedDuration = MediaTime(value: 2, timescale: 1) }
        writer.beforeFinalising = { rename(url.path, moved.path) }
        try Self.feed(writer, frames: 30)
        let summary = try writer.finish()
        #expect(summary.url.path == moved.path, "\(summary.url.path)")
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(Recovery.isFinished(moved))
        #expect(try MediaProbe.decodeLuma(moved, width: 320, height: 240).map(\.counter) == (0..<30).map { Int64($0) })
    }

    /// The file renamed while its compact copy is being made (a user tidying up 40–60 ms into
    /// the stop): the copy takes the file's place at its new name, and nothing is left beside
    /// it (the copy took the old name, which was free by then, and left the renamed file
    /// fragmented, 3 MB of reservation and all, with no word about it).
    @Test func aFileRenamedWhileItsCopyIsMadeIsReplacedAtItsNewName() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("stopping.mp4")
        let moved = dir.url.appendingPathComponent("tidied.mp4")
        let writer = try Self.writer(url)
        writer.beforePlacingACopy = { rename(url.path, moved.path) }
        try Self.feed(writer, frames: 30)
        let summary = try writer.finish()
        #expect(!summary.finalisation.isInPlace, "\(summary.finalisation)")
        #expect(summary.url.path == moved.path, "\(summary.url.path)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["tidied.mp4"])
        #expect(Recovery.isFinished(moved))
        #expect(try MediaProbe.decodeLuma(moved, width: 320, height: 240).map(\.counter) == (0..<30).map { Int64($0) })
    }

    /// Renamed while its copy is made, and another file put at its old name: that file is not
    /// the recording's and stays as it was; the recording is finalised at its new name.
    @Test func aFilePutAtTheOldNameWhileTheCopyIsMadeStays() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("stopping.mp4")
        let moved = dir.url.appendingPathComponent("tidied.mp4")
        let writer = try Self.writer(url)
        writer.beforePlacingACopy = {
            rename(url.path, moved.path)
            _ = FileManager.default.createFile(atPath: url.path, contents: Data("someone else's".utf8))
        }
        try Self.feed(writer, frames: 30)
        let summary = try writer.finish()
        #expect(summary.url.path == moved.path, "\(summary.url.path)")
        #expect(try Data(contentsOf: url) == Data("someone else's".utf8))
        #expect(Recovery.isFinished(moved))
        #expect(try MediaProbe.decodeLuma(moved, width: 320, height: 240).map(\.counter) == (0..<30).map { Int64($0) })
    }

    /// The file deleted with its folder while it was recorded (nowhere left to write beside it):
    /// what was recorded is copied to a rescue folder and finalised there, rather than lost.
    @Test func aFileDeletedWithItsFolderIsRescuedElsewhere() throws {
        let dir = try TemporaryDirectory()
        let folder = dir.url.appendingPathComponent("gone")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let rescue = dir.url.appendingPathComponent("rescue")
        try FileManager.default.createDirectory(at: rescue, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent("talk.mp4")
        let writer = try Self.writer(url) { $0.expectedDuration = MediaTime(value: 2, timescale: 1) }
        writer.rescueFolders = [dir.url.appendingPathComponent("missing"), rescue]
        try Self.feed(writer, frames: 30)
        try FileManager.default.removeItem(at: folder)
        let summary = try writer.finish()
        let saved = rescue.appendingPathComponent("talk.mp4")
        #expect(summary.url.path == saved.path, "\(summary.url.path)")
        #expect(Recovery.isFinished(saved))
        #expect(try MediaProbe.decodeLuma(saved, width: 320, height: 240).map(\.counter) == (0..<30).map { Int64($0) })
    }

    /// The file size and the media data stay exactly as the fragmented recording had them.
    @Test func theMediaDataIsNotRewritten() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("same.mp4")
        let writer = try Self.writer(url) { $0.expectedDuration = MediaTime(value: 2, timescale: 1) }
        writer.finaliseFault = .crash(after: .indexWritten)  // stops with the file still fragmented
        try Self.feed(writer, frames: 60)
        _ = try writer.finish()
        #expect(try Self.topLevelBoxes(url).contains { $0.type == "moof" })
        let size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int
        let digest = try Self.mediaDigest(url)
        let node = Self.inode(url)

        let summary = try Recovery.recover(url)
        #expect(summary.finalisation.isInPlace, "\(summary.finalisation)")
        #expect(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int == size)
        #expect(try Self.mediaDigest(url) == digest)
        #expect(Self.inode(url) == node)
        try Self.expectRegular(url)
        #expect(try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter) == (0..<60).map { Int64($0) })
        #expect(abs((try MediaProbe.probe(url).videoStreams.first?.duration ?? 0) - 2.0) < 0.001)
    }

    /// A crash at any step of finalising leaves a file that plays every frame, and recovering it
    /// finishes the job.
    @Test(arguments: MP4Finaliser.Step.allCases, [Container.mp4, .mov])
    func anInterruptedFinaliseStillPlaysAndRecovers(_ step: MP4Finaliser.Step, _ container: Container) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("step\(step.rawValue).\(container.fileExtension)")
        let writer = try Self.writer(url, container: container) { $0.expectedDuration = MediaTime(value: 2, timescale: 1) }
        writer.finaliseFault = .crash(after: step)
        try Self.feed(writer, frames: 60)
        _ = try writer.finish()

        // As the crash left it: ffprobe reads it, every frame decodes, the audio is there.
        let probe = try MediaProbe.probe(url)
        #expect(probe.videoStreams.first?.frameCount == 60, "after \(step)")
        #expect((probe.audioStreams.first?.frameCount ?? 0) >= 94, "after \(step)")
        let counters = try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
        #expect(counters == (0..<60).map { Int64($0) }, "after \(step)")
        let decodes = try Subprocess.run(["ffmpeg", "-v", "error", "-i", url.path, "-f", "null", "-"])
        #expect(decodes.status == 0 && decodes.stderr.isEmpty, "after \(step): \(decodes.stderr)")

        #expect(Recovery.isCutOff(url) == (step != .finished), "after \(step)")
        guard step != .finished else {
            try Self.expectRegular(url)
            return
        }
        let summary = try Recovery.recover(url)
        #expect(summary.finalisation.isInPlace, "after \(step): \(summary.finalisation)")
        #expect(summary.videoFrames == 60)
        #expect(!Recovery.isCutOff(url))
        try Self.expectRegular(url)
        #expect(try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter) == (0..<60).map { Int64($0) })
        let recovered = try MediaProbe.probe(url)
        #expect(abs((recovered.videoStreams.first?.duration ?? 0) - 2.0) < 0.001, "after \(step)")
        #expect(abs((recovered.audioStreams.first?.duration ?? 0) - 2.0) < 0.025, "after \(step)")
        try MergedFile.expectInSync(url, expected: ClipMaker.beepTimes([60]))
    }

    @Test func anInterruptedFinaliseRecoversToAnotherFile() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.mp4")
        let writer = try Self.writer(url) { $0.expectedDuration = MediaTime(value: 2, timescale: 1) }
        writer.finaliseFault = .crash(after: .halfFragmentsRetired)
        try Self.feed(writer, frames: 60)
        _ = try writer.finish()
        let before = try Data(contentsOf: url)
        let output = dir.url.appendingPathComponent("whole.mp4")
        try Data("keep".utf8).write(to: output)
        #expect { try Recovery.recover(url, to: output) } throws: { ($0 as? ReelError)?.code == .fileExists }
        #expect(try Data(contentsOf: output) == Data("keep".utf8))
        let summary = try Recovery.recover(url, to: output, overwrite: true)
        #expect(summary.url == output && summary.videoFrames == 60)
        #expect(try Data(contentsOf: url) == before, "the original is left as it was")
        try Self.expectRegular(output)
        #expect(try MediaProbe.decodeLuma(output, width: 320, height: 240).map(\.counter) == (0..<60).map { Int64($0) })
    }
}

/// Damaged files: finalising in place refuses them with a reason (or finishes) and never crashes.
@Suite struct InPlaceFinaliseDamageTests {
    @Test func damagedFragmentedFilesAreRefusedNotCrashedOn() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("source.mp4")
        let writer = try InPlaceFinaliseTests.writer(url, preset: "ultrafast") { $0.expectedDuration = MediaTime(value: 2, timescale: 1) }
        writer.finaliseFault = .crash(after: .indexWritten)
        try InPlaceFinaliseTests.feed(writer, frames: 45)
        _ = try writer.finish()
        let original = [UInt8](try Data(contentsOf: url))
        let boxes = try InPlaceFinaliseTests.topLevelBoxes(url)
        // Damage the headers: the index and the first fragment header.
        let moov = try #require(boxes.first { $0.type == "moov" })
        let moof = try #require(boxes.first { $0.type == "moof" })
        var generator = SeededRandom(seed: 2026)
        var refused = 0, finished = 0
        for round in 0..<120 {
            var bytes = original
            let region = round % 2 == 0 ? moov : moof
            for _ in 0..<(1 + round % 4) {
                let at = Int(region.offset) + Int(generator.next() % UInt64(region.size))
                bytes[at] = round % 3 == 0 ? 0xFF : UInt8(truncatingIfNeeded: generator.next())
            }
            let damaged = dir.url.appendingPathComponent("damaged-\(round).mp4")
            try Data(bytes).write(to: damaged)
            _ = Recovery.isCutOff(damaged)
            do {
                _ = try MP4Finaliser.finalise(damaged, shift: MediaTime(value: 1, timescale: 30))
                finished += 1
            } catch let error as MP4Finaliser.CopyInstead {
                #expect(!error.reason.isEmpty)
                refused += 1
            } catch let error as ReelError {
                #expect(!error.message.isEmpty)
                refused += 1
            }
            try? FileManager.default.removeItem(at: damaged)
        }
        #expect(refused > 0, "damage to the index and fragment headers is noticed")
        #expect(refused + finished == 120)
    }
}
