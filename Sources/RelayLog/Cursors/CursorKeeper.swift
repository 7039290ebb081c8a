/// Where a log's consumers keep their cursors durably: files beside the segments
/// (``FileCursorKeeper``), or a table beside a database's frames.
///
/// The ``WriteAheadLog``'s consumer registry calls it once a consumer commits a position, and only
/// counts the position as moved once the call returns: a cursor that could not be written holds
/// frames back as before, which errs on the side of reading again, never of loss.
package protocol CursorKeeper: Sendable {
    /// Writes cursor `name` at `position` durably.
    ///
    /// - Throws: ``LogError`` when it cannot be written (the position has not moved).
    func write(_ name: String, position: UInt64) async throws(LogError)

    /// Cursor `name` as stored now, `nil` when there is none: another process may have moved it
    /// (a relay that adopted the stream). Files are this process's alone: the file keeper reads
    /// nothing and answers `nil`.
    ///
    /// - Throws: ``LogError`` when it cannot be read.
    func read(_ name: String) async throws(LogError) -> UInt64?

    /// Removes cursor `name`; a missing one is fine.
    ///
    /// - Throws: ``LogError`` when it cannot be removed.
    func remove(_ name: String) async throws(LogError)
}
