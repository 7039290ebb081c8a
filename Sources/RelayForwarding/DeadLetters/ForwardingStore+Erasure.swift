public import RelayCore
import RelayEventJSON
import RelaySQLite

extension ForwardingStore {
    /// What the forwarding store holds of a person, found before an erasure changes anything.
    public struct ErasureFindings: Sendable, Hashable, Codable {
        /// The dead letters whose registration the selector matches (ids: not personal data).
        public var deadLetterIDs: [Int64] = []
        /// The log sequence numbers of those dead letters: Campaign refused them, so they were not delivered.
        public var deadLetteredSequences: Set<UInt64> = []
        /// When the uploader last delivered a registration of each of the person's tokens (RFC 3339),
        /// as the deduplication state remembers it (registrations from JSON or files only).
        public var lastDeliveredAt: [String] = []

        /// Nothing found.
        public init() {}
    }

    /// The dead letters of `selector`'s registrations, and the delivery times remembered for
    /// `tokenDigests` (``TokenDigest``).
    ///
    /// - Throws: ``ForwardingStoreError/sealed(_:letter:)`` for a dead letter sealed with a key the
    ///   store lacks, ``ForwardingStoreError/database(_:)``.
    public func erasureFindings(_ selector: ErasureSelector, tokenDigests: Set<String>) async throws(ForwardingStoreError) -> ErasureFindings {
        var findings = ErasureFindings()
        for letter in try await deadLetters(includeRequeued: true) {
            guard case .registration(let registration) = try? EventDecoder.decode(letter.eventJSON, defaultTime: .now()),
                selector.matches(registration)
            else { continue }
            findings.deadLetterIDs.append(letter.id)
            findings.deadLetteredSequences.insert(letter.sequence)
        }
        do throws(SQLiteError) {
            let read = try connection.prepare("SELECT delivered_at FROM delivered_registrations WHERE registration_token = ?")
            defer { read.finalize() }
            for digest in tokenDigests.sorted() {
                read.reset()
                try read.bind(1, digest)
                while try read.step() { if let at = read.text(0) { findings.lastDeliveredAt.append(at) } }
            }
        } catch {
            throw .database(error)
        }
        findings.lastDeliveredAt.sort()
        return findings
    }

    /// What ``erase(deadLetterIDs:tokenDigests:)`` removed.
    public struct Erasure: Sendable, Hashable, Codable {
        /// Dead letters deleted.
        public var deadLetters = 0
        /// Rows of the deduplication state deleted.
        public var deliveredRecords = 0
        /// Whether the journal (`forwarding.sqlite-wal`) was emptied of the old pages (see ``Reseal``).
        public var journalCleared = true

        /// Nothing removed.
        public init() {}
    }

    /// Deletes the dead letters `deadLetterIDs` and the deduplication state of `tokenDigests`, in
    /// one transaction, with SQLite's secure delete (freed pages are zeroed), then truncates the
    /// journal so that no old page keeps them. Idempotent.
    ///
    /// With a ``DeadLetterTable``, the letters are deleted there first, in a transaction of their
    /// own (PostgreSQL's `VACUUM` frees their rows' space later, as for the log's rows).
    ///
    /// - Throws: ``ForwardingStoreError/database(_:)`` or ``ForwardingStoreError/table(_:)``
    ///   (nothing deleted in the store that failed).
    public func erase(deadLetterIDs: [Int64], tokenDigests: Set<String>) async throws(ForwardingStoreError) -> Erasure {
        var erasure = Erasure()
        if let table, !deadLetterIDs.isEmpty {
            do {
                erasure.deadLetters = try await table.delete(ids: deadLetterIDs)
            } catch {
                throw .table(error)
            }
        }
        let fileLetters = table == nil ? deadLetterIDs : []
        do throws(SQLiteError) {
            try connection.execute("PRAGMA secure_delete = ON")
            try connection.transaction { () throws(SQLiteError) in
                let deleteLetter = try connection.prepare("DELETE FROM dead_letters WHERE id = ?")
                defer { deleteLetter.finalize() }
                for id in fileLetters {
                    deleteLetter.reset()
                    try deleteLetter.bind(1, id)
                    try deleteLetter.step()
                    erasure.deadLetters += Int(connection.changes)
                }
                let deleteDelivered = try connection.prepare("DELETE FROM delivered_registrations WHERE registration_token = ?")
                defer { deleteDelivered.finalize() }
                for digest in tokenDigests.sorted() {
                    deleteDelivered.reset()
                    try deleteDelivered.bind(1, digest)
                    try deleteDelivered.step()
                    erasure.deliveredRecords += Int(connection.changes)
                }
            }
            let checkpoint = try connection.prepare("PRAGMA wal_checkpoint(TRUNCATE)")
            defer { checkpoint.finalize() }
            if try checkpoint.step() { erasure.journalCleared = checkpoint.int64(0) == 0 }
        } catch {
            throw .database(error)
        }
        return erasure
    }
}
