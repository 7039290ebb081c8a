public import Logging
import NIOConcurrencyHelpers

/// A log handler that keeps every message with its metadata, for tests that assert on what was
/// logged, and tells `heard` of each message as it is logged (so a test can wait for one).
public final class CapturedLogRecords: LogHandler, Sendable {
    private let stored = NIOLockedValueBox<[(message: String, metadata: [String: String])]>([])
    private let heard: @Sendable (String) -> Void

    /// A handler telling `heard` of each message.
    public init(heard: @escaping @Sendable (String) -> Void = { _ in }) {
        self.heard = heard
    }

    /// Every message with its metadata (values as text), in the order logged.
    public var records: [(message: String, metadata: [String: String])] { stored.withLockedValue { $0 } }
    /// Every message, in the order logged.
    public var messages: [String] { records.map(\.message) }

    /// None: a test logger's metadata is in each record.
    public var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    /// Everything is kept.
    public var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    /// None.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    /// Keeps the event and tells `heard` of it.
    public func log(event: LogEvent) {
        let metadata = (event.metadata ?? [:]).mapValues { "\($0)" }
        stored.withLockedValue { $0.append((event.message.description, metadata)) }
        heard(event.message.description)
    }
}
