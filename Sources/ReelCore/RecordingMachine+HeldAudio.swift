// Audio that waits for the video: sound ahead of the pictures under a size limit (a stop
// there leaves both tracks ending together) or moved later by an offset (a stop leaves out
// what lies past the last picture).

extension RecordingMachine {
    /// Holds `sample` (audio of an input the recording has) if it runs ahead of the video or
    /// its input has sound held; returns whether it did (releasing the oldest held past
    /// ``heldAudioSpan``).
    mutating func hold(_ sample: SourcedSample, into actions: inout [Action]) -> Bool {
        guard holdsAudioForVideo, case .audio(let buffer) = sample.sample else { return false }
        let videoAt = (videoReached ?? timeline.zero ?? .zero) + configuration.frameRate.frameDuration
        // An input with sound held waits behind it (its sound stays in order); another
        // input's sound that is not ahead goes on (a microphone moved later holds back no
        // application's sound).
        guard buffer.presentationTime >= videoAt || heldAudio.contains(where: { $0.source == sample.source }) else { return false }
        heldAudio.append(sample)
        // Held for at most the span: past it the sound goes without waiting.
        let newest = heldAudio.lazy.compactMap { held -> MediaTime? in
            if case .audio(let b) = held.sample { return b.endTime } else { return nil }
        }.max() ?? buffer.endTime
        while let first = heldAudio.first, case .audio(let b) = first.sample, b.presentationTime < newest - heldAudioSpan {
            releaseFirstHeldAudio(into: &actions)
        }
        return true
    }

    /// Whether audio ahead of the video waits for it (under a size limit or an audio lead,
    /// while video comes).
    var holdsAudioForVideo: Bool {
        (configuration.holdsAudioAheadOfVideo || configuration.audioLead > .zero)
            && configuration.hasVideo && video.expectsFrames && !endedBySize
    }

    /// How far ahead of the video held audio may reach: 3 s, and the audio lead.
    private var heldAudioSpan: MediaTime { MediaTime(value: 3, timescale: 1) + configuration.audioLead }

    /// Gives the held audio that starts before `time` (of every input; each in its order).
    /// Under an audio lead only what ends by then: a buffer across it waits for the next
    /// frame, or is cut where the video ends.
    mutating func releaseHeldAudio(upTo time: MediaTime, into actions: inout [Action]) {
        let byEnd = configuration.audioLead > .zero
        func ready(_ buffer: AudioBuffer) -> Bool { byEnd ? buffer.endTime <= time : buffer.presentationTime < time }
        guard heldAudio.contains(where: { held in
            guard case .audio(let buffer) = held.sample else { return true }
            return ready(buffer)
        }) else { return }
        var kept: [SourcedSample] = []
        var blocked = Set<SourceID>()
        for held in heldAudio {
            guard case .audio(let buffer) = held.sample else { continue }
            if blocked.contains(held.source) || !ready(buffer) {
                blocked.insert(held.source)
                kept.append(held)
            } else if let input = configuration.audioInputs[held.source] {
                place(buffer, input: input, into: &actions)
            }
        }
        heldAudio = kept
    }

    mutating func releaseFirstHeldAudio(into actions: inout [Action]) {
        let sample = heldAudio.removeFirst()
        guard case .audio(let buffer) = sample.sample, let input = configuration.audioInputs[sample.source] else { return }
        place(buffer, input: input, into: &actions)
    }

    /// Gives the held audio up to the video's end (`time`, a buffer across it cut there) and
    /// leaves out the rest: it lies past the last picture.
    mutating func releaseHeldAudio(cutAt time: MediaTime, into actions: inout [Action]) {
        let held = heldAudio
        heldAudio = []
        for sample in held {
            guard case .audio(let buffer) = sample.sample, let input = configuration.audioInputs[sample.source],
                  buffer.presentationTime < time else { continue }
            let rate = Int32(buffer.format.sampleRate)
            let frames = Int((time - buffer.presentationTime).convertedValue(to: rate, rounding: .nearest))
            guard frames > 0 else { continue }
            place(frames >= buffer.frameCount ? buffer : buffer.slice(frames: 0..<frames), input: input, into: &actions)
        }
    }
}
