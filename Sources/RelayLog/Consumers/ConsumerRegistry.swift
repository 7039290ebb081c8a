import RelayIO

/// The log's consumers: those declared (``LogConsumerDeclaration``), their cursors' positions,
/// and the retention floor, the lowest cursor, below which every consumer has passed.
///
/// A value the ``WriteAheadLog`` owns: the positions change only once a cursor is durably written
/// (``write(_:position:)`` on the cursors' own thread, so a cursor commit never waits behind a
/// group commit), then ``moved(_:to:)``.
struct ConsumerRegistry: Sendable {
    /// Every registered cursor and its position.
    private(set) var positions: [String: UInt64]
    /// The consumers declared, by name.
    private var declared: [String: LogConsumerDeclaration] = [:]
    /// Where cursors are written.
    private let cursors: any CursorKeeper

    /// The registry of an opened log: the cursors found on disk, none declared yet.
    init(positions: [String: UInt64], cursors: any CursorKeeper) {
        self.positions = positions
        self.cursors = cursors
    }

    /// Every event below it has been passed by every consumer; 0 without consumers (a log nobody
    /// reads keeps everything).
    var passedFloor: UInt64 { positions.values.min() ?? 0 }

    /// The lowest cursor of `names` (a tenant's destinations), or `otherwise` when none has one.
    func floor(of names: [String], otherwise: UInt64) -> UInt64 {
        names.compactMap { positions[$0] }.min() ?? otherwise
    }

    /// The consumers declared, by name.
    var consumers: [LogConsumerDeclaration] { declared.values.sorted { $0.name < $1.name } }

    /// Whether `name` is declared.
    func isDeclared(_ name: String) -> Bool { declared[name] != nil }

    /// Throws unless `name` is declared.
    ///
    /// - Throws: ``LogError/undeclaredConsumer(_:declared:)``.
    func checkDeclared(_ name: String) throws(LogError) {
        guard declared[name] != nil else { throw .undeclaredConsumer(name, declared: declared.keys.sorted()) }
    }

    /// Where `name` starts reading: its cursor, or `oldest` when segments it had passed are gone.
    ///
    /// - Throws: ``LogError/undeclaredConsumer(_:declared:)`` when it is not declared.
    func startPosition(of name: String, oldest: UInt64) throws(LogError) -> UInt64 {
        guard declared[name] != nil, let position = positions[name] else {
            throw .undeclaredConsumer(name, declared: declared.keys.sorted())
        }
        return max(position, oldest)
    }

    /// Counts `consumer` as declared.
    mutating func declare(_ consumer: LogConsumerDeclaration) {
        declared[consumer.name] = consumer
    }

    /// Writes cursor `name` at `position` durably (``CursorKeeper``).
    ///
    /// - Throws: ``LogError`` when it cannot be written.
    func write(_ name: String, position: UInt64) async throws(LogError) {
        try await cursors.write(name, position: position)
    }

    /// Cursor `name` as stored now (``CursorKeeper/read(_:)``).
    ///
    /// - Throws: ``LogError`` when it cannot be read.
    func stored(_ name: String) async throws(LogError) -> UInt64? {
        try await cursors.read(name)
    }

    /// Cursor `name` was written at `position`.
    mutating func moved(_ name: String, to position: UInt64) {
        positions[name] = position
    }

    /// Deletes cursor `name` (a missing one is fine).
    ///
    /// - Throws: ``LogError`` when it cannot be removed.
    func removeFile(_ name: String) async throws(LogError) {
        try await cursors.remove(name)
    }

    /// Forgets `name`: it no longer holds segments back.
    mutating func remove(_ name: String) {
        positions[name] = nil
        declared[name] = nil
    }
}
