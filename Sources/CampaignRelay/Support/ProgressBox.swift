import NIOConcurrencyHelpers

/// A ``ProgressLine`` that `@Sendable` progress callbacks can share.
final class ProgressBox: Sendable {
    private let line = NIOLockedValueBox(ProgressLine(enabled: true))

    func update(_ text: String) {
        line.withLockedValue { $0.update(text) }
    }

    func finish() {
        line.withLockedValue { $0.finish() }
    }
}
