extension WriteAheadLog {
    /// Declares a consumer while the log is open (a destination added by a reload of the
    /// configuration): creates its cursor at the oldest event kept unless it has one, durably,
    /// before it returns, so retention knows it before it reads.
    ///
    /// - Throws: ``LogError/invalidCursorName(_:)``, or ``LogError`` when the cursor cannot be written.
    public func declareConsumer(_ consumer: LogConsumerDeclaration) async throws(LogError) {
        try await declare(consumer)
    }

    /// Declares a consumer: creates its cursor at the oldest event kept unless it has one.
    func declare(_ consumer: LogConsumerDeclaration) async throws(LogError) {
        try await registerCursor(consumer.name)
        consumerRegistry.declare(consumer)
    }

    /// Creates cursor `name` at `initialPosition` (default: the oldest event kept) unless it
    /// exists, and counts it as declared; returns its position. Opening declares consumers this
    /// way; tests call it to place a cursor where they need it.
    @discardableResult
    func registerCursor(_ name: String, initialPosition: UInt64? = nil) async throws(LogError) -> UInt64 {
        try CursorStore.validate(name)
        if !consumerRegistry.isDeclared(name) { consumerRegistry.declare(.cursorFile(name)) }
        if let position = consumerRegistry.positions[name] { return position }
        let position = initialPosition ?? oldestSequence
        try await commitCursor(name, to: position)
        return position
    }

    /// Where the declared consumer `name` starts reading: its cursor, or the oldest event kept
    /// when segments it had passed are gone.
    ///
    /// - Throws: ``LogError/undeclaredConsumer(_:declared:)`` when the log was opened without it.
    public func startPosition(of name: String) throws(LogError) -> UInt64 {
        try consumerRegistry.startPosition(of: name, oldest: oldestSequence)
    }

    /// The consumers declared when the log opened, by name.
    public var consumers: [LogConsumerDeclaration] { consumerRegistry.consumers }

    /// The position of a registered cursor, or `nil`.
    public func cursorPosition(_ name: String) -> UInt64? {
        consumerRegistry.positions[name]
    }

    /// Every registered cursor and its position.
    public var cursorPositionsByName: [String: UInt64] { consumerRegistry.positions }

    /// Durably moves the cursor of the declared consumer `name` to `position` (the next sequence
    /// it will consume), then applies the retention to the segments every cursor has passed.
    ///
    /// - Throws: ``LogError/undeclaredConsumer(_:declared:)`` when the log was opened without it,
    ///   ``LogError`` when the cursor cannot be written. A segment that cannot be removed (a broken
    ///   archive) is logged and tried again later: the consumer goes on.
    public func commitCursor(_ name: String, to position: UInt64) async throws(LogError) {
        try CursorStore.validate(name)
        try consumerRegistry.checkDeclared(name)
        try await consumerRegistry.write(name, position: position)
        consumerRegistry.moved(name, to: position)
        try? await removeConsumedSegments()
    }

    /// Reads cursor `name` again from where cursors are kept, and moves it there when it is
    /// further on: another process (a relay that adopted this stream in PostgreSQL) forwarded
    /// events meanwhile. Files are this process's alone: nothing changes for them.
    ///
    /// - Throws: ``LogError`` when it is not declared or cannot be read.
    public func reloadCursor(_ name: String) async throws(LogError) {
        try consumerRegistry.checkDeclared(name)
        guard let stored = try await consumerRegistry.stored(name) else { return }
        if stored > (consumerRegistry.positions[name] ?? 0) { consumerRegistry.moved(name, to: stored) }
    }

    /// Removes a cursor, so it no longer holds segments back.
    public func removeCursor(_ name: String) async throws(LogError) {
        try CursorStore.validate(name)
        try await consumerRegistry.removeFile(name)
        consumerRegistry.remove(name)
    }
}
