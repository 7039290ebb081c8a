import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The rule for blocking waits in tests, checked where they happen: a wait that holds its thread
/// (a sleep, a process wait, a pipe read) runs on a thread of its own, never on the cooperative
/// pool.
///
/// On two cores the pool has two threads, and every in-process server a test talks to (the
/// emulator, the relay) needs them: two tests blocked in a wait starve the others' servers, and a
/// healthy run times out. ``refuseBlocking(_:fileID:filePath:line:column:)`` records an issue, in the test that made the wait,
/// when it is called on the pool; every blocking helper of the test support calls it first, and
/// `BlockingWaitRuleTests` finds blocking calls anywhere else in `Tests/`.
public enum CooperativePool {
    private typealias GetLabel = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?

    /// `dispatch_queue_get_label(DISPATCH_CURRENT_QUEUE_LABEL)`, which the Dispatch overlay does
    /// not show, looked up by name.
    private static let currentQueueLabel: GetLabel? = dlsym(dlopen(nil, RTLD_NOW), "dispatch_queue_get_label").map {
        unsafeBitCast($0, to: GetLabel.self)
    }

    /// The label Swift's global concurrent executor gives the queue its threads run (Linux).
    static let poolLabel = "Swift global concurrent queue"

    /// Whether the calling thread is one of the cooperative pool's: the threads that run tasks
    /// with no executor of their own (not a `Thread`, a ``BlockingExecutor``-style executor, an
    /// actor with a custom executor, or the main thread).
    public static var isCurrentThread: Bool {
        guard let label = currentQueueLabel?(nil) else { return false }
        return strcmp(label, poolLabel) == 0
    }

    /// Whether this platform lets ``isCurrentThread`` tell: the lookup found the function.
    public static var canTell: Bool { currentQueueLabel != nil }

    /// Records an issue naming `wait` when the caller runs on the cooperative pool; the wait goes
    /// on (the test fails, and says where to move the wait).
    /// (`fileID`, `filePath`, `line` and `column` name the caller's caller, where the wait was asked for.)
    public static func refuseBlocking(
        _ wait: String, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column
    ) {
        guard isCurrentThread else { return }
        Issue.record(
            "\(wait) blocks a thread of the cooperative pool: await the async form, or run it on a Thread of its own",
            sourceLocation: SourceLocation(fileID: fileID, filePath: filePath, line: line, column: column))
    }
}
