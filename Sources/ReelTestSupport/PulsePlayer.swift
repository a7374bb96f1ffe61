import Foundation
import ReelCore
internal import CPulse

/// A player that libpulse's own tools cannot be: a playback stream of a sine tone under a
/// chosen `application.name`, opened with stream flags such as "dont-move" (which `pacat` has
/// no option for), for testing what application-audio routing does with such a stream.
///
/// It runs on a libpulse threaded main loop until ``stop()`` (or `deinit`).
public final class PulsePlayer: @unchecked Sendable {
    private let loop: OpaquePointer
    private let context: OpaquePointer
    private var stream: OpaquePointer?
    private let tone: ToneState

    /// What the write callback needs: the tone and where it is.
    private final class ToneState {
        let frequency: Double
        let amplitude: Double
        var frame = 0
        init(frequency: Double, amplitude: Double) {
            self.frequency = frequency
            self.amplitude = amplitude
        }
    }

    /// Connects to `server` and starts playing.
    ///
    /// - Parameters:
    ///   - server: the server string.
    ///   - applicationName: the stream's `application.name`.
    ///   - frequency: the tone's frequency in hertz (float32, 48 kHz, 2 channels).
    ///   - dontMove: whether the stream is opened so that it may not be moved.
    public init(server: String, applicationName: String, frequency: Double, amplitude: Double = 0.4,
                dontMove: Bool = true) throws {
        tone = ToneState(frequency: frequency, amplitude: amplitude)
        guard let loop = pa_threaded_mainloop_new() else { throw ReelError(.sourceUnavailable, "no PulseAudio main loop") }
        let properties = pa_proplist_new()
        defer { pa_proplist_free(properties) }
        pa_proplist_sets(properties, "application.name", applicationName)
        guard let context = pa_context_new_with_proplist(pa_threaded_mainloop_get_api(loop), applicationName, properties) else {
            pa_threaded_mainloop_free(loop)
            throw ReelError(.sourceUnavailable, "no PulseAudio context")
        }
        self.loop = loop
        self.context = context
        pa_context_connect(context, server, PA_CONTEXT_NOAUTOSPAWN, nil)
        pa_threaded_mainloop_start(loop)
        let deadline = Date().addingTimeInterval(5)
        while true {
            pa_threaded_mainloop_lock(loop)
            let state = pa_context_get_state(context)
            pa_threaded_mainloop_unlock(loop)
            if state == PA_CONTEXT_READY { break }
            if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED || Date() > deadline {
                stop()
                throw ReelError(.sourceUnavailable, "the player could not connect to \(server)")
            }
            usleep(5_000)
        }
        pa_threaded_mainloop_lock(loop)
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: 48_000, channels: 2)
        let made = pa_stream_new_with_proplist(context, "tone", &spec, nil, properties)
        stream = made
        pa_stream_set_write_callback(made, { stream, bytes, userdata in
            guard let stream, let userdata else { return }
            let tone = Unmanaged<ToneState>.fromOpaque(userdata).takeUnretainedValue()
            let frames = bytes / 8
            var samples = [Float](repeating: 0, count: frames * 2)
            for i in 0..<frames {
                let value = Float(tone.amplitude * sin(2 * Double.pi * tone.frequency * Double(tone.frame) / 48_000))
                samples[2 * i] = value
                samples[2 * i + 1] = value
                tone.frame += 1
            }
            _ = samples.withUnsafeBytes { pa_stream_write(stream, $0.baseAddress, frames * 8, nil, 0, PA_SEEK_RELATIVE) }
        }, Unmanaged.passUnretained(tone).toOpaque())
        var attributes = pa_buffer_attr(maxlength: UInt32.max, tlength: 48_000 * 8 / 10, prebuf: UInt32.max,
                                        minreq: UInt32.max, fragsize: UInt32.max)
        let flags = PA_STREAM_ADJUST_LATENCY.rawValue | (dontMove ? PA_STREAM_DONT_MOVE.rawValue : 0)
        pa_stream_connect_playback(made, nil, &attributes, pa_stream_flags_t(flags), nil, nil)
        pa_threaded_mainloop_unlock(loop)
        let ready = Date().addingTimeInterval(5)
        while true {
            pa_threaded_mainloop_lock(loop)
            let state = pa_stream_get_state(made)
            pa_threaded_mainloop_unlock(loop)
            if state == PA_STREAM_READY { break }
            if state == PA_STREAM_FAILED || Date() > ready {
                stop()
                throw ReelError(.sourceUnavailable, "the player's stream did not start")
            }
            usleep(5_000)
        }
    }

    private var stopped = false

    /// Stops playing and disconnects. Safe to call twice.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        pa_threaded_mainloop_lock(loop)
        if let stream {
            pa_stream_set_write_callback(stream, nil, nil)
            pa_stream_disconnect(stream)
            pa_stream_unref(stream)
        }
        stream = nil
        pa_context_disconnect(context)
        pa_threaded_mainloop_unlock(loop)
        pa_threaded_mainloop_stop(loop)
        pa_context_unref(context)
        pa_threaded_mainloop_free(loop)
    }

    deinit { stop() }
}
