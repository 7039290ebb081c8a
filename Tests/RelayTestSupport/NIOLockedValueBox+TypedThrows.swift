import NIOConcurrencyHelpers

extension NIOLockedValueBox {
    /// `withLockedValue` that keeps the closure's error type: NIO's is `rethrows`, which widens a
    /// `throws(FileSystemError)` body to `any Error`, and the simulated file systems promise typed
    /// errors like the real one.
    func withLockedValueTyped<T, Failure: Error>(_ body: (inout Value) throws(Failure) -> T) throws(Failure) -> T {
        let outcome: Result<T, Failure> = withLockedValue { value in
            do throws(Failure) {
                return .success(try body(&value))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }
}
