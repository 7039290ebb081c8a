import NIOCore
import NIOPosix
import RelayIO

#if canImport(Glibc)
    import Glibc
#endif

/// The event loop the uploader's connections to Campaign run on: a thread of its own (at
/// ``UploadConfiguration/threadPriority``), apart from the event loops that answer the relay's
/// own clients. Sharing
/// them, a backlog being forwarded put request handling behind the upload traffic (see
/// `Benchmarks/request-latency-under-backlog.sh`).
final class UpstreamEventLoop: Sendable {
    /// The group of one thread.
    let group: MultiThreadedEventLoopGroup

    /// Starts the thread.
    init(priority: BlockingExecutor.Priority) {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let niceness = priority.niceness
        guard niceness != 0 else { return }
        group.next().execute {
            // `who` 0 is the calling thread: on Linux the nice value belongs to each thread.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
        }
    }

    /// Stops the thread once its connections are closed.
    func shutdown() async {
        try? await group.shutdownGracefully()
    }
}
