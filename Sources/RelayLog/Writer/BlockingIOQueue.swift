import Dispatch

/// A serial thread for blocking file calls (pwrite, fdatasync, rename), so they never hold one of
/// Swift's few cooperative threads while the disk works.
struct BlockingIOQueue: Sendable {
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label, qos: .userInitiated)
    }

    /// Runs `work` on the queue and returns its result.
    func run<Value: Sendable>(_ work: @escaping @Sendable () -> Value) async -> Value {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }
}
