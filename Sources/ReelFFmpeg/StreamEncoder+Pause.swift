import ReelCore

// A pause of the recording without ending the stream, and the keyframes the recorder asks for.

extension StreamEncoder {
    /// Flushes what the video encoder holds at a pause of the recording, without ending the
    /// stream: every frame appended so far comes out to the sinks now (so a kill during the
    /// pause loses none of them, and a clip ends complete), then each sink is told to put what
    /// it took where it belongs (``PacketSink/flush()``: a file completes its fragment).
    ///
    /// An encoder with a lookahead (x264's B-frames and rate control: about 15 frames at
    /// veryfast) gives out a frame only once later ones come; here the last picture is sent
    /// again, in grid slots after the last frame, until every frame before has come out. The
    /// first of them is a keyframe, so nothing before refers to them, and so is the next real
    /// frame, so that nothing after does: no sink ever sees them, and the slots they took are
    /// taken out of the times of every packet after (the stream goes on as if they were never
    /// sent). Audio is left as it is: its encoders hold a frame or two, and the sound goes on
    /// sample for sample after the pause.
    ///
    /// The padding is sent from the grid slot of `end` (where the recording paused, on the
    /// streams' time; without it, from the slot after the last frame). x264 times the decoding
    /// of the frames after the pause from the frames sent before them, padding included: sent
    /// right after the last frame when the frames before the pause were lost (a source or a
    /// recorder that fell behind), the padding had the next frames decode that many slots
    /// early, before the pause (a clip then began decoding before its zero: its file had a
    /// packet timed before its first frame, and a merge could not copy it).
    ///
    /// - Throws: encoding errors and what required sinks throw.
    package func pause(endingAt end: MediaTime? = nil) throws {
        guard phase == .encoding else { return }
        if let video, !inEncoder.isEmpty {
            // A replaced encoder's flush first: its frames were all shown before these.
            try writeFlushedVideo(waiting: true)
            var first = lastSentSlot + 1
            if let end, let frameRate { first = max(first, frameRate.frameIndex(at: end, rounding: .nearest) + slotOffset) }
            var slot = first
            // Bounded: an encoder that held more than 300 frames would be broken.
            while !inEncoder.isEmpty, slot - first < 300 {
                try video.sendRepeat(index: slot, keyframe: slot == first)
                paddingSlots.append(slot...slot)
                slot += 1
                try drainVideo()
            }
            lastSentSlot = slot - 1
            slotOffset += slot - first
            keyframeAtNextFrame = true
            mergePaddingSlots()
        }
        for attached in sinks where attached.open {
            do {
                try attached.sink.flush()
            } catch where attached.policy == .optional {
                continue  // the sink says so itself when it next writes, or at its finish
            }
        }
    }

    /// Keeps ``paddingSlots`` short: adjacent slots as one range.
    private func mergePaddingSlots() {
        var merged: [ClosedRange<Int64>] = []
        for range in paddingSlots {
            if let last = merged.last, last.upperBound + 1 >= range.lowerBound {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        paddingSlots = merged
    }

    /// Asks for the first video frame at or after grid slot `index` to be a keyframe (a clip
    /// begins there).
    package func requestKeyframe(atGridIndex index: Int64) {
        keyframeRequests.append(index)
    }

    /// Whether the frame at grid slot `index` will be a keyframe that the frame modes (which
    /// leave repeated pictures out) must not leave out: the encoder's rule, asked rather than
    /// copied.
    package func keyframeDue(atGridIndex index: Int64) -> Bool {
        guard let video else { return false }
        return keyframeRequests.contains { $0 <= index } || video.keyframeDue(at: index + slotOffset)
    }
}
