import UnixSignals

/// Runs `work`, cancelling it on SIGINT or SIGTERM (so it can save its place and stop cleanly).
/// Returns whether a signal stopped it.
func runCancellingOnSignals<Value: Sendable>(_ work: @escaping @Sendable () async throws -> Value) async throws -> (Value, interrupted: Bool) {
    let task = Task { try await work() }
    let watcher = Task {
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        for await _ in signals {
            task.cancel()
            return true
        }
        return false
    }
    let value = try await task.value
    watcher.cancel()
    let interrupted = task.isCancelled
    return (value, interrupted)
}
