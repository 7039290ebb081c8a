import Synchronization

/// A ``ProgressLine`` that `@Sendable` progress callbacks can share.
final class ProgressBox: Sendable {
    private let line = Mutex(ProgressLine(enabled: true))

    func update(_ text: String) {
        line.withLock { $0.update(text) }
    }

    func finish() {
        line.withLock { $0.finish() }
    }
}
