import NIOConcurrencyHelpers

/// A value made on first use and kept, for a resource that may not exist yet when the server
/// starts (the aggregates database with `--no-aggregates`): a failed attempt is not kept, so a
/// later request tries again.
final class OpenedOnce<Value: Sendable>: Sendable {
    private let stored = NIOLockedValueBox<Value?>(nil)

    /// The kept value, or a new one from `open` (two first uses at once may both open; one is kept).
    func value<Failure: Error>(_ open: () async throws(Failure) -> Value) async throws(Failure) -> Value {
        if let value = stored.withLockedValue({ $0 }) { return value }
        let opened = try await open()
        return stored.withLockedValue { stored in
            if let value = stored { return value }
            stored = opened
            return opened
        }
    }
}
