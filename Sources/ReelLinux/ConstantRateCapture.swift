import ReelCore

/// What one grab of a screen or window capture gave.
enum GrabOutcome {
    /// A frame, stamped.
    case frame(VideoFrame)
    /// Every pooled frame is still held downstream: the frame is dropped.
    case noBuffer
    /// The source went away (a display, a window, a screen cast): the capture ends.
    case lost(ReelError)
}

/// The capture thread of a source that takes a picture at each slot of a constant frame rate
/// (the X11 screen and window, the Wayland screen): sleep to each slot, grab, deliver; under a
/// real clock, slots that passed while grabbing are skipped and counted as dropped rather than
/// caught up in a burst.
enum ConstantRateCapture {
    /// Runs until the thread is asked to stop or `grab` reports the source lost; the first
    /// frame is the first slot at or after the moment it starts.
    static func run(rate: FrameRate, context: SourceContext, thread: WorkerThread,
                    grab: (_ presentationTime: MediaTime, _ sequenceNumber: Int64) -> GrabOutcome) {
        var index = rate.frameIndex(at: context.startTime(), rounding: .up)
        while !thread.isStopRequested {
            let pts = rate.time(ofFrame: index)
            context.clock.sleep(until: context.origin + pts)
            if thread.isStopRequested { break }
            switch grab(pts, index) {
            case .frame(let frame):
                context.deliver(.video(frame))
            case .noBuffer:
                context.report(.droppedFrames(1, reason: .encoderBehind))
            case .lost(let error):
                context.report(.lost(error))
                return
            }
            index += 1
            if context.clock.isRealTime {
                let due = rate.frameIndex(at: context.timelineNow())
                if due > index {
                    context.report(.droppedFrames(Int(due - index), reason: .captureLate))
                    index = due
                }
            }
        }
    }
}
