/// An actor that does blocking work (SQLite, file reads): every job of it runs on its own
/// ``BlockingExecutor``, so none of it ever holds a thread of the cooperative pool.
public protocol BlockingActor: Actor {
    /// The thread the actor runs on.
    nonisolated var executor: BlockingExecutor { get }
}

extension BlockingActor {
    /// Runs the actor on ``BlockingActor/executor``.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
}
