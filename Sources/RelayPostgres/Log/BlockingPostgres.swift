import NIOCore
import NIOPosix

/// Runs async PostgreSQL work from a thread made for blocking calls and waits for its answer: the
/// log's readers are synchronous (``RelayLog/FrameReader``) and run on such threads (a lane's, the
/// aggregator's), never on the cooperative pool or an event loop.
enum BlockingPostgres {
    /// `body`'s result, waited for on the calling thread.
    ///
    /// - Throws: what `body` throws.
    static func wait<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) throws -> Value {
        let promise = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: Value.self)
        promise.completeWithTask(body)
        return try promise.futureResult.wait()
    }
}
