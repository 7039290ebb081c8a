import RelayLog
import RelaySQLite

extension ForwardingStore {
    /// Seals every dead-letter value that is in the clear, or sealed with another key than the
    /// newest, with the newest key (`wal rekey`), in one transaction; then vacuums the file and
    /// truncates its journal, so the old bytes leave the disk's live pages. Returns the letters
    /// rewritten, and whether the journal was emptied (not while another process read the store).
    /// Without keys it does nothing.
    ///
    /// - Throws: ``ForwardingStoreError/sealed(_:letter:)`` for a value sealed with a key the store
    ///   lacks (nothing changed), ``ForwardingStoreError/database(_:)`` when SQLite fails.
    public func resealDeadLetters() async throws(ForwardingStoreError) -> Reseal {
        guard let keys else { return Reseal(letters: 0, journalCleared: true) }
        let newest = keys.newest.id
        if let table {
            // Every letter is opened before any is written: one the keys cannot open changes nothing.
            var resealed: [DeadLetterValues] = []
            for letter in try await storedDeadLetters(tenant: nil, includeRequeued: true, limit: nil) {
                let values = letter.values
                guard [values.eventJSON, values.url, values.responseBody].contains(where: { SealedText.keyID(of: $0) != newest }) else { continue }
                resealed.append(
                    DeadLetterValues(
                        id: letter.id, eventJSON: try seal(try open(values.eventJSON, .eventJSON, letter: letter.id), .eventJSON),
                        url: try seal(try open(values.url, .url, letter: letter.id), .url),
                        responseBody: try seal(try open(values.responseBody, .responseBody, letter: letter.id), .responseBody)))
            }
            guard !resealed.isEmpty else { return Reseal(letters: 0, journalCleared: true) }
            do {
                return Reseal(letters: try await table.replaceValues(resealed), journalCleared: true)
            } catch {
                throw .table(error)
            }
        }
        var unsealable: ForwardingStoreError?
        do throws(SQLiteError) {
            var rewritten = 0
            try connection.transaction { () throws(SQLiteError) in
                let read = try connection.prepare("SELECT id, event_json, url, response_body FROM dead_letters")
                var rows: [(Int64, [String])] = []
                while try read.step() {
                    let values = [read.text(1) ?? "", read.text(2) ?? "", read.text(3) ?? ""]
                    if values.contains(where: { SealedText.keyID(of: $0) != newest }) { rows.append((read.int64(0), values)) }
                }
                read.finalize()
                let update = try connection.prepare("UPDATE dead_letters SET event_json = ?, url = ?, response_body = ? WHERE id = ?")
                defer { update.finalize() }
                for (id, values) in rows {
                    update.reset()
                    for (index, column) in SealedColumn.allCases.enumerated() {
                        let sealed: String
                        do throws(ForwardingStoreError) {
                            sealed = try seal(try open(values[index], column, letter: id), column)
                        } catch {
                            // Rolls the transaction back: nothing changes.
                            unsealable = error
                            throw SQLiteError(code: 1, message: "\(error)", context: "dead letter \(id)")
                        }
                        try update.bind(Int32(index + 1), sealed)
                    }
                    try update.bind(4, id)
                    try update.step()
                    rewritten += 1
                }
            }
            var journalCleared = true
            if rewritten > 0 {
                try connection.execute("VACUUM")
                // Busy (1 in the first column) while another connection (a running server) reads: the
                // journal may still hold the old pages until its next checkpoint.
                let checkpoint = try connection.prepare("PRAGMA wal_checkpoint(TRUNCATE)")
                defer { checkpoint.finalize() }
                if try checkpoint.step() { journalCleared = checkpoint.int64(0) == 0 }
            }
            return Reseal(letters: rewritten, journalCleared: journalCleared)
        } catch {
            throw unsealable ?? .database(error)
        }
    }

    /// What ``resealDeadLetters()`` did.
    public struct Reseal: Sendable, Hashable {
        /// Dead letters sealed with the newest key.
        public var letters: Int
        /// Whether the journal (`forwarding.sqlite-wal`) was emptied of the old pages; `false` when
        /// a reader (a running server) kept the checkpoint from finishing: they leave it at the
        /// journal's next checkpoint.
        public var journalCleared: Bool

        /// Creates a result.
        public init(letters: Int, journalCleared: Bool) {
            self.letters = letters
            self.journalCleared = journalCleared
        }
    }
}
