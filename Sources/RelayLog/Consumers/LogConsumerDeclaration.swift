/// A consumer of the log, declared when the log opens (``WriteAheadLog/open(dataDirectory:configuration:consumers:fileSystem:logger:wallClock:)``).
///
/// Declaring every consumer at open is what makes retention safe without an ordering rule: each
/// declared consumer has a cursor before anyone can append or move another cursor, so no segment
/// leaves the log before every consumer has passed it. A consumer declared for the first time
/// starts at the oldest event the log still keeps. A cursor, once made, outlives the process that
/// declared it: later opens that do not declare it still keep segments for it, until
/// ``WriteAheadLog/removeCursor(_:)`` removes it.
public struct LogConsumerDeclaration: Sendable, Hashable {
    /// Where a consumer keeps its exact position.
    public enum PositionStore: Sendable, Hashable {
        /// In its cursor file: the cursor is its position (the upload lanes, the relay lane).
        case cursorFile
        /// In its own store, in the transaction of what it wrote (SQLite's or PostgreSQL's counts):
        /// the cursor file only holds segments back, follows the store's commits and may lag
        /// (``RetentionCursor``).
        case ownStore
    }

    /// The consumer's name: its cursor is `wal/cursors/<name>.cursor` (1 to 96 letters, digits,
    /// `-` or `_`).
    public var name: String
    /// Where it keeps its exact position.
    public var positionStore: PositionStore

    /// A consumer `name` keeping its position in `positionStore`.
    public init(name: String, positionStore: PositionStore) {
        self.name = name
        self.positionStore = positionStore
    }

    /// A consumer whose position is its cursor file.
    public static func cursorFile(_ name: String) -> LogConsumerDeclaration {
        LogConsumerDeclaration(name: name, positionStore: .cursorFile)
    }

    /// A consumer whose exact position lives in its own store; its cursor only holds segments back.
    public static func ownStore(_ name: String) -> LogConsumerDeclaration {
        LogConsumerDeclaration(name: name, positionStore: .ownStore)
    }
}
