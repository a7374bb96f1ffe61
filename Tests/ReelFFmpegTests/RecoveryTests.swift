import Foundation
import Testing
import ReelCore
@testable import ReelFFmpeg
import ReelTestSupport

/// Recovering recordings as crashes, kills and full disks leave them: only what was completely
/// written is kept, nothing recorded is lost on the way, a file being written is left alone.
@Suite(.serialized) struct RecoveryTests {
    /// A recording of `frames` frames left as a kill leaves it: its complete fragments (MP4/MOV)
    /// or clusters (MKV), never finalised.
    static func cutOff(_ url: URL, frames: Int = 120, container: Container? = nil) throws {
        let writer = try InPlaceFinaliseTests.writer(url, container: container, preset: "ultrafast")
        try InPlaceFinaliseTests.feed(writer, frames: frames)
        writer.cancelWriting()
    }

    /// Whether another open file description holds a lock on `url` (a shared lock is refused).
    static func isLocked(_ url: URL) -> Bool {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_SH | LOCK_NB) == 0 else { return errno == EWOULDBLOCK }
        flock(fd, LOCK_UN)
        return false
    }

    /// `ffmpeg -v error` decoding all of `url`: what it printed (nothing for a clean file).
    static func decodeErrors(_ url: URL) throws -> String {
        let r = try Subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", url.path, "-f", "null", "-"])
        return r.status == 0 ? r.stderr : "exit \(r.status): \(r.stderr)"
    }

    static func inode(_ url: URL) -> ino_t {
        var s = stat()
        return stat(url.path, &s) == 0 ? s.st_ino : 0
    }

    // MARK: Only what was completely written

    /// Copies of a recording cut at many offsets — inside a fragment header, between header and
    /// media data, inside the media data, at the end of a frame and one byte before it — each
    /// recover to exactly the frames whose bytes are all on the disk (those of a torn fragment
    /// too, as `ffmpeg -c copy` keeps them), and decode without a single error.
    @Test func truncatedRecordingsKeepExactlyTheirWholeFrames() throws {
        let dir = try TemporaryDirectory()
        let source = dir.url.appendingPathComponent("source.mp4")
        try Self.cutOff(source, frames: 120)
        let boxes = try InPlaceFinaliseTests.topLevelBoxes(source)
        let packets = try MediaProbe.packetExtents(source)
        let fragments = boxes.indices.filter { boxes[$0].type == "moof" && $0 + 1 < boxes.count && boxes[$0 + 1].type == "mdat" }
        try #require(fragments.count >= 5, "\(boxes.map(\.type))")
        let bytes = try Data(contentsOf: source)
        var cuts: [Int64] = []
        for i in [fragments[0], fragments[1], fragments[fragments.count / 2], fragments[fragments.count - 1]] {
            let moof = boxes[i], mdat = boxes[i + 1]
            cuts += [moof.offset + 4, moof.offset + 8 + 12, moof.offset + moof.size - 1, moof.offset + moof.size,
                     mdat.offset + 8 + 5, mdat.offset + mdat.size / 2, mdat.offset + mdat.size - 1]
            // At the end of the fragment's third frame, and one byte short of it.
            let inside = packets.filter { $0.pos > mdat.offset && $0.pos + $0.size <= mdat.offset + mdat.size }
            if inside.count >= 3 { cuts += [inside[2].pos + inside[2].size, inside[2].pos + inside[2].size - 1] }
        }
        for cut in cuts {
            let url = dir.url.appendingPathComponent("cut-\(cut).mp4")
            try bytes.prefix(Int(cut)).write(to: url)
            // Every frame whose bytes are all before the cut (its fragment's header is, then).
            let expected = packets.filter { $0.pos + $0.size <= cut }.count
            if expected == 0 {
                #expect(throws: ReelError.self, "cut at \(cut)") { try Recovery.recover(url) }
                #expect(try Data(contentsOf: url) == bytes.prefix(Int(cut)), "cut at \(cut): left as it was")
                continue
            }
            #expect(Recovery.isCutOff(url), "cut at \(cut)")
            let summary = try Recovery.recover(url)
            #expect(summary.videoFrames == Int64(expected), "cut at \(cut)")
            #expect(try Self.decodeErrors(url) == "", "cut at \(cut)")
            #expect(try MediaProbe.probe(url).videoStreams.first?.frameCount == expected, "cut at \(cut)")
            #expect(try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter) == (0..<expected).map { Int64($0) },
                    "cut at \(cut)")
            #expect(!Recovery.isCutOff(url), "cut at \(cut)")
        }
    }

    /// A torn fragment made whole where it lies (as recover does on a full disk, where there is
    /// no room for a copy) and then finalised in place holds the same whole frames as the copy
    /// to another file, and its sound up to where the cut tore it; a recover interrupted after
    /// the sample counts were lowered (before the media data's size) finds the same frames.
    @Test func aTornFragmentIsMadeWholeInPlace() throws {
        let dir = try TemporaryDirectory()
        let source = dir.url.appendingPathComponent("source.mp4")
        try Self.cutOff(source, frames: 75)
        let boxes = try InPlaceFinaliseTests.topLevelBoxes(source)
        let packets = try MediaProbe.packetExtents(source)
        let bytes = try Data(contentsOf: source)
        let last = try #require(boxes.last { $0.type == "mdat" })
        let inside = packets.filter { $0.pos > last.offset && $0.pos + $0.size <= last.offset + last.size }
        try #require(inside.count >= 4)
        // Torn in the fourth frame of the last fragment: three of its frames are whole.
        let cut = inside[3].pos + inside[3].size / 2
        let expected = packets.filter { $0.pos + $0.size <= cut }.count
        for interrupted in [false, true] {
            let url = dir.url.appendingPathComponent("torn-\(interrupted).mp4")
            try bytes.prefix(Int(cut)).write(to: url)
            guard case .fragmented(let layout) = try RecordingStructure.inspect(url), let torn = layout.torn else {
                Issue.record("the torn fragment is not found")
                return
            }
            #expect(torn.keptFrames == 3 && torn.listedFrames == inside.count, "\(torn)")
            #expect(layout.leftOutBytes == Int64(cut) - (inside[2].pos + inside[2].size))
            if interrupted {
                // Only the sample counts: the file is still torn, and is recovered as before.
                var countsOnly = torn
                countsOnly.patches.removeLast()
                try countsOnly.apply(to: url)
                guard case .fragmented(let again) = try RecordingStructure.inspect(url) else {
                    Issue.record("not a cut-off recording after the sample counts")
                    return
                }
                // The same whole frames; only the size of the media data is left to write.
                #expect(again.torn?.patches == [torn.patches.last!] && again.torn?.keptFrames == 3)
                _ = try Recovery.recover(url, to: dir.url.appendingPathComponent("copy-\(interrupted).mp4"))
                try again.torn!.apply(to: url)
            } else {
                try torn.apply(to: url)
            }
            guard case .fragmented(let whole) = try RecordingStructure.inspect(url) else {
                Issue.record("not a fragmented recording once made whole")
                return
            }
            #expect(!whole.isTruncated && whole.torn == nil)
            let finalisation = try AssetWriter.finalise(url, container: .mp4, inPlace: true)
            guard case .inPlace = finalisation else {
                Issue.record("not finalised in place: \(finalisation)")
                return
            }
            #expect(try Self.decodeErrors(url) == "")
            #expect(try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter) == (0..<expected).map { Int64($0) })
        }
        let copy = dir.url.appendingPathComponent("copy-true.mp4")
        #expect(try MediaProbe.decodeLuma(copy, width: 320, height: 240).map(\.counter) == (0..<expected).map { Int64($0) })
    }

    /// A recording finalised in place by a copy keeps who owns it and who may read it (a
    /// private recording stays private; root recovering a user's file leaves it the user's).
    @Test(arguments: [Container.mp4, .mkv])
    func aCopyTakesTheRecordingsOwnerAndPermissions(_ container: Container) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("private.\(container.fileExtension)")
        try Self.cutOff(url, frames: 150, container: container)
        #expect(chmod(url.path, 0o600) == 0)
        #expect(chown(url.path, 65534, 65534) == 0, "the tests run as root")
        let summary = try Recovery.recover(url)
        #expect(!summary.finalisation.isInPlace, "finalised by copying: \(summary.finalisation)")
        var info = stat()
        #expect(stat(url.path, &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o600)
        #expect(info.st_uid == 65534 && info.st_gid == 65534)
    }

    // MARK: The output is never the input

    @Test func theOutputCannotBeTheRecordingItself() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.mp4")
        try Self.cutOff(url, frames: 90)
        let before = try Data(contentsOf: url)
        let symlink = dir.url.appendingPathComponent("link.mp4")
        try FileManager.default.createSymbolicLink(at: symlink, withDestinationURL: url)
        let hardLink = dir.url.appendingPathComponent("hard.mp4")
        try FileManager.default.linkItem(at: url, to: hardLink)
        let sub = dir.url.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
        let outputs = [url, symlink, hardLink, dir.url, URL(fileURLWithPath: sub.path + "/../cut.mp4")]
        for output in outputs {
            do {
                _ = try Recovery.recover(url, to: output, overwrite: true)
                Issue.record("-o \(output.path) was not refused")
            } catch let error as ReelError {
                #expect(error.code == .invalidConfiguration && error.message.contains("itself"), "-o \(output.path): \(error)")
            }
            #expect(try Data(contentsOf: url) == before, "-o \(output.path) left the recording as it was")
        }
        // Given through the link, the recording is the link's target.
        #expect(throws: ReelError.self) { try Recovery.recover(symlink, to: url, overwrite: true) }
        #expect(try Data(contentsOf: url) == before)
    }

    @Test func anOutputFolderTakesTheRecordingsName() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.mp4")
        try Self.cutOff(url, frames: 60)
        let before = try Data(contentsOf: url)
        let folder = dir.url.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let summary = try Recovery.recover(url, to: folder)
        let expected = folder.appendingPathComponent("cut.mp4")
        #expect(summary.url.standardizedFileURL == expected.standardizedFileURL)
        #expect(try Self.decodeErrors(expected) == "")
        #expect(try MediaProbe.probe(expected).videoStreams.first?.frameCount == Int(summary.videoFrames))
        #expect(try Data(contentsOf: url) == before, "the recording is only read")
        #expect(throws: ReelError.self) { try Recovery.recover(url, to: folder) }  // cut.mp4 is there now
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["cut.mp4"], "no temporary file left")
        // A folder that does not exist is not taken for a file name.
        let missing = URL(fileURLWithPath: dir.url.path + "/missing/")
        #expect(throws: ReelError.self) { try Recovery.recover(url, to: missing) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == ["cut.mp4", "out"])
    }

    @Test func theOutputsExtensionSaysItsContainer() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.mp4")
        try Self.cutOff(url, frames: 90)
        let frames = try MediaProbe.packetExtents(url).count
        let mkv = dir.url.appendingPathComponent("rec.mkv")
        _ = try Recovery.recover(url, to: mkv)
        let probe = try MediaProbe.probe(mkv)
        #expect(probe.formatName.contains("matroska"), "\(probe.formatName)")
        #expect(probe.videoStreams.first?.frameCount == frames)
        #expect(probe.audioStreams.count == 1)
        #expect(try Self.decodeErrors(mkv) == "")
        #expect(try MediaProbe.decodeLuma(mkv, width: 320, height: 240).map(\.counter) == (0..<frames).map { Int64($0) })

        // A file whose finalising was interrupted is finished on a copy, then copied into MKV.
        let interrupted = dir.url.appendingPathComponent("interrupted.mp4")
        let writer = try InPlaceFinaliseTests.writer(interrupted, preset: "ultrafast") { $0.expectedDuration = MediaTime(value: 2, timescale: 1) }
        writer.finaliseFault = .crash(after: .oldIndexRetired)
        try InPlaceFinaliseTests.feed(writer, frames: 60)
        _ = try writer.finish()
        let before = try Data(contentsOf: interrupted)
        let finished = dir.url.appendingPathComponent("interrupted.mkv")
        #expect(try Recovery.recover(interrupted, to: finished).videoFrames == 60)
        #expect(try MediaProbe.probe(finished).formatName.contains("matroska"))
        #expect(try Self.decodeErrors(finished) == "")
        #expect(try MediaProbe.decodeLuma(finished, width: 320, height: 240).map(\.counter) == (0..<60).map { Int64($0) })
        #expect(try Data(contentsOf: interrupted) == before, "only read")

        let avi = dir.url.appendingPathComponent("rec.avi")
        #expect(throws: ReelError.self) { try Recovery.recover(url, to: avi) }
        #expect(!FileManager.default.fileExists(atPath: avi.path))
    }

    /// A recording recovered by copying — into another file, or in place past a torn fragment
    /// (a clip its full disk cut short) — reads as every packet its index lists, and merges.
    /// Its fragments hold more pictures than libavformat reads to learn the streams (over 5 MB
    /// before the first sound, less than a second apart, so read in the file's order), and the
    /// sound packets are read without their lengths: the copy
    /// listed its last one with none, its edit list ended before that packet, readers left it
    /// out, and a merge refused the clip as "cut short" (46 of its 47 audio packets).
    @Test func aRecoveredCopyHoldsEveryPacketItListsAndMerges() throws {
        let dir = try TemporaryDirectory()
        let source = dir.url.appendingPathComponent("source.mp4")
        let size = PixelSize(width: 640, height: 480)
        let writer = try InPlaceFinaliseTests.writer(source, preset: "ultrafast") {
            $0.fragmentInterval = MediaTime(value: 4, timescale: 5)
            $0.video?.settings.rateControl = .crf(0)
            $0.video?.inputSize = size
        }
        // Noise, lossless: 300 KB a picture, 24 of them a fragment.
        var random = SeededRandom(seed: 7)
        let pool = FramePool(format: .yuv420p, size: size, capacity: 2)
        let tone = ToneSource()
        for i in 0..<60 {
            let frame = pool.makeFrame()!
            frame.withUnsafeMutablePlane(0) { bytes, _ in
                for j in stride(from: 0, to: bytes.count - 8, by: 8) { bytes.storeBytes(of: random.next(), toByteOffset: j, as: UInt64.self) }
            }
            try writer.appendVideo(frame, at: InPlaceFinaliseTests.rate.time(ofFrame: Int64(i)))
            let samples = (i * 1600..<(i + 1) * 1600).flatMap { n in [tone.value(atSample: Int64(n)), tone.value(atSample: Int64(n))] }
            try writer.appendAudio(AudioBuffer(format: AudioFormat(), presentationTime: MediaTime(value: Int64(i * 1600), timescale: 48_000),
                                               data: samples.withUnsafeBytes { Array($0) }), track: 0)
        }
        writer.cancelWriting()
        let last = try #require(try InPlaceFinaliseTests.topLevelBoxes(source).last { $0.type == "mdat" })
        let torn = dir.url.appendingPathComponent("torn.mp4")
        try Data(contentsOf: source).prefix(Int(last.offset + last.size / 2)).write(to: torn)
        let elsewhere = dir.url.appendingPathComponent("elsewhere.mp4")
        _ = try Recovery.recover(source, to: elsewhere)
        let inPlace = try Recovery.recover(torn)
        guard case .copied = inPlace.finalisation else {
            Issue.record("the torn recording was not copied: \(inPlace.finalisation)")
            return
        }
        for url in [elsewhere, torn] {
            let input = try InputFile(url: url)
            let streams = (0..<Int(input.context.pointee.nb_streams)).map { input.context.pointee.streams[$0]!.pointee }
            var read = [Int64](repeating: 0, count: streams.count)
            while let packet = try input.next(failing: { FFmpeg.error($0, "read") }) { read[Int(packet.pointee.stream_index)] += 1 }
            #expect(streams.count == 2 && read == streams.map(\.nb_frames), "\(url.lastPathComponent): read \(read) of \(streams.map(\.nb_frames))")
            let merged = dir.url.appendingPathComponent("merged-\(url.lastPathComponent)")
            #expect(throws: Never.self, "\(url.lastPathComponent)") { try Merger.merge([MergeInput(url: url)], to: merged) }
        }
    }

    // MARK: Complete files and other files

    @Test func aCompleteFileNeedsNothing() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("done.mp4")
        let writer = try InPlaceFinaliseTests.writer(url, preset: "ultrafast")
        try InPlaceFinaliseTests.feed(writer, frames: 30)
        _ = try writer.finish()
        let before = try Data(contentsOf: url)
        let summary = try Recovery.recover(url)
        #expect(summary.finalisation == .notNeeded)
        #expect(summary.videoFrames == 30)
        #expect(try Data(contentsOf: url) == before)
        let output = dir.url.appendingPathComponent("copy.mp4")
        #expect(try Recovery.recover(url, to: output).finalisation == .notNeeded)
        #expect(!FileManager.default.fileExists(atPath: output.path), "nothing to write")

        let text = dir.url.appendingPathComponent("notes.mp4")
        try Data("not a video".utf8).write(to: text)
        #expect(throws: ReelError.self) { try Recovery.recover(text) }
        #expect(try Data(contentsOf: text) == Data("not a video".utf8))
    }

    /// s6 N14: a finished file cut short afterwards (a copy interrupted, a full disk) is said to
    /// be that, not "not an MP4, MOV, MKV, M4A… recording", and is left as it is.
    @Test func aFinishedFileCutShortLaterIsSaidToBeSo() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.mp4")
        let writer = try InPlaceFinaliseTests.writer(url, preset: "ultrafast")
        try InPlaceFinaliseTests.feed(writer, frames: 60)
        _ = try writer.finish()
        let whole = try Data(contentsOf: url)
        let cut = whole.prefix(whole.count - whole.count / 4)
        try cut.write(to: url)
        #expect {
            _ = try Recovery.recover(url)
        } throws: { error in
            let message = (error as? ReelError)?.description ?? "\(error)"
            return message.contains("whose end is missing") && message.contains("stream copy")
        }
        #expect(try Data(contentsOf: url) == cut, "left as it was")
    }

    // MARK: Matroska

    /// An MKV left as a kill leaves it (a Segment of unknown size, no duration, no cues) is cut
    /// off; recovering it gives a complete MKV with every frame, in place or elsewhere.
    @Test func aCutOffMKVRecovers() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.mkv")
        try Self.cutOff(url, frames: 150, container: .mkv)
        let frames = try MediaProbe.packetExtents(url).count
        try #require(frames > 0)
        #expect(Recovery.isCutOff(url))
        #expect(Recovery.cutOffRecordings(in: dir.url) == [url])
        let elsewhere = dir.url.appendingPathComponent("whole.mkv")
        _ = try Recovery.recover(url, to: elsewhere)
        let summary = try Recovery.recover(url)
        for result in [url, elsewhere] {
            #expect(!Recovery.isCutOff(result), "\(result.lastPathComponent)")
            let probe = try MediaProbe.probe(result)
            #expect(probe.formatName.contains("matroska"))
            #expect(abs(probe.duration - Double(frames) / 30) < 0.1, "\(result.lastPathComponent): a duration of \(probe.duration)")
            #expect(probe.videoStreams.first?.frameCount == frames)
            #expect(try Self.decodeErrors(result) == "")
            #expect(try MediaProbe.decodeLuma(result, width: 320, height: 240).map(\.counter) == (0..<frames).map { Int64($0) })
        }
        #expect(summary.videoFrames == Int64(frames))
        #expect(try Recovery.recover(url).finalisation == .notNeeded, "recovered once is complete")
    }

    /// A killed MKV or WebM loses no more than a killed MP4: its clusters close every fragment
    /// interval (half a second), not only at keyframes (every two seconds or more), so what
    /// reached the disk runs to within a fragment of the kill. Before, a kill lost up to 2 s.
    @Test(arguments: [Container.mkv, .mp4])
    func aKilledFileKeepsAllButItsLastFragment(_ container: Container) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("killed.\(container.fileExtension)")
        try Self.cutOff(url, frames: 150, container: container)     // 5 s, keyframes every 2 s or more
        let kept = try MediaProbe.packetExtents(url).count
        #expect(kept >= 150 - 20, "\(container): \(kept) of 150 frames reached the disk")
    }

    /// A WebM cut off is Matroska cut off: recovered in place it stays a WebM (its DocType
    /// says so, and it still holds only VP9 and Opus), with every frame.
    @Test func aCutOffWebMRecoversAsWebM() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("cut.webm")
        let writer = try InPlaceFinaliseTests.writer(url, container: .webm, preset: "ultrafast") { configuration in
            configuration.video?.settings.codec = .vp9
            for i in configuration.audio.indices { configuration.audio[i].settings = AudioSettings(codec: .opus) }
        }
        try InPlaceFinaliseTests.feed(writer, frames: 90)
        writer.cancelWriting()
        let frames = try MediaProbe.packetExtents(url).count
        try #require(frames > 0)
        #expect(Recovery.isCutOff(url))
        #expect(Recovery.cutOffRecordings(in: dir.url) == [url])
        let summary = try Recovery.recover(url)
        #expect(summary.videoFrames == Int64(frames))
        #expect(!Recovery.isCutOff(url))
        let probe = try MediaProbe.probe(url)
        #expect(probe.formatName.contains("webm"))
        #expect(probe.videoStreams.map(\.codec) == ["vp9"] && probe.audioStreams.map(\.codec) == ["opus"])
        let head = try Data(contentsOf: url).prefix(64)
        #expect(head.range(of: Data("webm".utf8)) != nil && head.range(of: Data("matroska".utf8)) == nil, "the DocType is webm")
        #expect(try Self.decodeErrors(url) == "")
        #expect(try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter) == (0..<frames).map { Int64($0) })
    }

    @Test func truncatedMKVsKeepTheirCompleteBlocks() throws {
        let dir = try TemporaryDirectory()
        let source = dir.url.appendingPathComponent("source.mkv")
        try Self.cutOff(source, frames: 150, container: .mkv)
        let packets = try MediaProbe.packetExtents(source)
        let bytes = try Data(contentsOf: source)
        let firstPacket = try #require(packets.first?.pos)
        // Inside the first video block nothing is complete enough to recover.
        let early = dir.url.appendingPathComponent("early.mkv")
        try bytes.prefix(Int(firstPacket + 40)).write(to: early)
        #expect(throws: ReelError.self) { try Recovery.recover(early) }
        #expect(try Data(contentsOf: early) == bytes.prefix(Int(firstPacket + 40)), "left as it was")
        for cut in [Int64(bytes.count) / 3, Int64(bytes.count) / 2 + 7, Int64(bytes.count) - 3] {
            let url = dir.url.appendingPathComponent("cut-\(cut).mkv")
            try bytes.prefix(Int(cut)).write(to: url)
            #expect(Recovery.isCutOff(url), "cut at \(cut)")
            let summary = try Recovery.recover(url)
            // A block's bytes run from its position past its payload by a header of a few bytes.
            let most = packets.filter { $0.pos + $0.size <= cut }.count
            let least = packets.filter { $0.pos + $0.size + 16 <= cut }.count
            #expect(summary.videoFrames >= Int64(least) && summary.videoFrames <= Int64(most), "cut at \(cut): \(summary.videoFrames)")
            #expect(try Self.decodeErrors(url) == "", "cut at \(cut)")
            #expect(try MediaProbe.decodeLuma(url, width: 320, height: 240).map(\.counter)
                    == (0..<Int(summary.videoFrames)).map { Int64($0) }, "cut at \(cut)")
        }
    }

    // MARK: Files being written

    /// The writer of a recording holds an advisory lock on its file from its creation until it
    /// is finalised, in place or by a copy that takes its place.
    @Test(arguments: [Container.mp4, .mkv], [true, false])
    func aWriterHoldsItsFileLockedUntilItIsFinalised(_ container: Container, _ finalisedByCopying: Bool) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("live.\(container.fileExtension)")
        let writer = try InPlaceFinaliseTests.writer(url, container: container, preset: "ultrafast") {
            if finalisedByCopying { $0.indexReservation = 0 } else { $0.expectedDuration = MediaTime(value: 2, timescale: 1) }
        }
        #expect(Self.isLocked(url), "locked from creation")
        try InPlaceFinaliseTests.feed(writer, frames: 45)
        #expect(Self.isLocked(url))
        let summary = try writer.finish()
        #expect(summary.finalisation.isInPlace == (container != .mkv && !finalisedByCopying), "\(summary.finalisation)")
        #expect(!Self.isLocked(url), "released once finalised")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == [url.lastPathComponent], "no temporary file left")
        #expect(try Self.decodeErrors(url) == "")
    }

    /// A file that a writer holds is not offered for recovery, and recovering it is refused.
    @Test(arguments: [Container.mp4, .mkv], [true, false])
    func aFileBeingWrittenIsLeftAlone(_ container: Container, _ finalisedByCopying: Bool) throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("live.\(container.fileExtension)")
        let writer = try InPlaceFinaliseTests.writer(url, container: container, preset: "ultrafast") {
            if finalisedByCopying { $0.indexReservation = 0 }
        }
        #expect(Self.isLocked(url), "locked from creation")
        try InPlaceFinaliseTests.feed(writer, frames: 150)
        #expect(Recovery.isCutOff(url), "fragments (clusters) are on disk")
        #expect(Self.isLocked(url))
        #expect(Recovery.cutOffRecordings(in: dir.url).isEmpty, "a recording in progress is not cut off")
        let before = try Data(contentsOf: url)
        do {
            _ = try Recovery.recover(url)
            Issue.record("recovering a file being written was not refused")
        } catch let error as ReelError {
            #expect(error.code == .busy, "\(error)")
            #expect(error.message.contains("being recorded right now"), "\(error)")
        }
        #expect(throws: ReelError.self) { try Recovery.recover(url, to: dir.url.appendingPathComponent("copy.mp4")) }
        #expect(try Data(contentsOf: url) == before, "left as it was")
        _ = try writer.finish()
        #expect(!Recovery.isCutOff(url))
        #expect(try Self.decodeErrors(url) == "")
    }

    @Test func anAbandonedWriterReleasesItsFile() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("left.mp4")
        try Self.cutOff(url, frames: 60)
        #expect(!Self.isLocked(url))
        #expect(Recovery.cutOffRecordings(in: dir.url) == [url])
        _ = try Recovery.recover(url)
        #expect(!Self.isLocked(url))
    }

    /// Nobody may replace a file being recorded by creating a file over it.
    @Test func aFileBeingWrittenIsNotOverwritten() throws {
        let dir = try TemporaryDirectory()
        let url = dir.url.appendingPathComponent("live.mp4")
        let writer = try InPlaceFinaliseTests.writer(url, preset: "ultrafast")
        try InPlaceFinaliseTests.feed(writer, frames: 30)
        let before = try Data(contentsOf: url)
        #expect(throws: ReelError.self) {
            _ = try InPlaceFinaliseTests.writer(url, preset: "ultrafast") { $0.overwrite = true }
        }
        #expect(try Data(contentsOf: url) == before, "not truncated")
        _ = try writer.finish()
    }
}
