import Foundation
import ReelCore

/// The clips' two threads (see ``ClipFileSink``).
extension ClipFileSink {
    /// A job on one of the clips' threads.
    typealias Job = @Sendable () -> Void

    /// Which of the clips' threads a job runs on.
    enum ClipThread {
        /// `reel.clips.open`: a clip's file made ahead, listed at its first packet, or removed
        /// if its clip never came. Never behind a finish: a resumed clip's packets reach its
        /// file while the clip before it is being finished (a slow disk's syncs, a long clip's
        /// finalise), not once that is done (a kill meanwhile lost them, and past the sink's
        /// memory bound the recorder waited).
        case opening
        /// `reel.clips`: a clip's file finished (its last writes, finalise, syncs, placement),
        /// then what its owner does on the disk once it is (the manifest listing it finished).
        case finishing
    }

    /// The two serial threads, each made with its first job. The jobs of one run in the order
    /// given; those of the two, side by side: what one makes never waits for the other's
    /// (a manifest written by both is written whole, newest last: see `RecordingSession.write`).
    struct Threads {
        private var opening: OutputWorker<Job>?
        private var finishing: OutputWorker<Job>?

        /// Runs `job` on `thread`, after the jobs given to it before.
        mutating func run(on thread: ClipThread, _ job: @escaping Job) {
            switch thread {
            case .opening:
                let worker = opening ?? OutputWorker(name: "reel.clips.open", capacity: 1 << 16, policy: .block) { $0() }
                opening = worker
                worker.send(job)
            case .finishing:
                let worker = finishing ?? OutputWorker(name: "reel.clips", capacity: 1 << 16, policy: .block) { $0() }
                finishing = worker
                worker.send(job)
            }
        }

        /// Waits until every job given to either thread is done (the threads end; the next job
        /// makes its thread again).
        mutating func drain() {
            opening?.finish()
            opening = nil
            finishing?.finish()
            finishing = nil
        }
    }
}
