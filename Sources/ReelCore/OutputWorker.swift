/// The one "queue + worker + drain" of an output: a ``Channel`` and a ``WorkerThread`` that
/// consumes it, started together and finished together.
///
/// The body runs on the worker thread and receives from the channel until it returns `nil`
/// (closed and drained, or cancelled); ``finish()`` closes the channel and waits for the body
/// to return, so that what was sent before is handled (or, under a dropping policy, was
/// counted as dropped) when it returns.
package final class OutputWorker<Element: Sendable>: Sendable {
    /// What the worker consumes.
    package let channel: Channel<Element>
    private let thread: WorkerThread

    /// Starts a thread named `name` that runs `body` with `channel`.
    package init(name: String, channel: Channel<Element>, body: @escaping @Sendable (Channel<Element>) -> Void) {
        self.channel = channel
        thread = WorkerThread(name: name) { _ in body(channel) }
    }

    /// Starts a thread named `name` that hands each element, oldest first, to `handle`, over
    /// a channel of `capacity` elements under `policy`.
    package convenience init(name: String, capacity: Int, policy: ChannelPolicy,
                             handle: @escaping @Sendable (Element) -> Void) {
        self.init(name: name, channel: Channel(capacity: capacity, policy: policy)) { channel in
            while let element = channel.receive() { handle(element) }
        }
    }

    /// Sends `element` to the worker (see ``Channel/send(_:weight:)``); whether it was queued.
    @discardableResult
    package func send(_ element: Element) -> Bool {
        channel.send(element) == .queued
    }

    /// Closes the channel and waits until the body has returned.
    package func finish() {
        channel.close()
        thread.join()
    }

    /// Whether the body has returned.
    package var hasEnded: Bool { thread.isFinished }
}
