import NIOCore
package import NIOPosix
package import RelayIO

/// The event loop the uploader's connections to Campaign run on: a thread of its own (at
/// ``UploadConfiguration/threadPriority``), apart from the event loops that answer the relay's
/// own clients. Sharing them, a backlog being forwarded put request handling behind the upload
/// traffic (see `Benchmarks/request-latency-under-backlog.sh`).
package final class UpstreamEventLoop: Sendable {
    /// The group of one thread.
    package let group: MultiThreadedEventLoopGroup

    /// Starts the thread.
    package init(priority: BlockingExecutor.Priority) {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        group.next().execute { priority.applyToCurrentThread() }
    }

    /// Stops the thread once its connections are closed.
    package func shutdown() async {
        try? await group.shutdownGracefully()
    }
}
