import PostgresNIO
import RelayLog

/// Cursors in `relay_log_cursors`, beside the stream's frames, so that a relay adopting the
/// stream starts each lane where its owner left it.
///
/// The cursors of forwarding lanes (``fenced``) move only while this process holds the stream's
/// lease, checked in the same statement against the token it was granted (``StreamLeaseFence``):
/// a relay that lost the lease (frozen, partitioned) cannot move a cursor the adopter now owns.
/// A cursor never moves back.
struct PostgresCursorKeeper: CursorKeeper {
    let stream: String
    let link: PostgresLink
    /// The consumers whose cursors are fenced by the lease (the forwarding lanes).
    let fenced: Set<String>
    /// The lease this process holds on the stream, if any.
    let fence: StreamLeaseFence

    func write(_ name: String, position: UInt64) async throws(LogError) {
        let (stream, value) = (self.stream, Int64(bitPattern: position))
        // A lane's cursor moves under the lease; without it, one may only be made where there is
        // none (declaring a new lane at open, before the first lease round).
        enum Rule {
            case free
            case underLease(holder: String, token: Int64)
            case onlyWhereNone
        }
        let rule: Rule
        if fenced.contains(name) {
            rule = fence.current(for: stream).map { .underLease(holder: $0.holder, token: $0.token) } ?? .onlyWhereNone
        } else {
            rule = .free
        }
        let moved: Bool
        do {
            moved = try await link.run { connection, logger in
                let rows: PostgresRowSequence
                switch rule {
                case .underLease(let holder, let token):
                    rows = try await connection.query(
                        """
                        INSERT INTO relay_log_cursors (stream, consumer, position)
                        SELECT \(stream), \(name), \(value) WHERE EXISTS (
                            SELECT 1 FROM relay_log_leases WHERE stream = \(stream) AND holder = \(holder) AND token = \(token))
                        ON CONFLICT (stream, consumer) DO UPDATE SET position = greatest(relay_log_cursors.position, excluded.position)
                        RETURNING 1
                        """, logger: logger)
                case .onlyWhereNone:
                    rows = try await connection.query(
                        """
                        INSERT INTO relay_log_cursors (stream, consumer, position) VALUES (\(stream), \(name), \(value))
                        ON CONFLICT (stream, consumer) DO NOTHING RETURNING 1
                        """, logger: logger)
                case .free:
                    rows = try await connection.query(
                        """
                        INSERT INTO relay_log_cursors (stream, consumer, position) VALUES (\(stream), \(name), \(value))
                        ON CONFLICT (stream, consumer) DO UPDATE SET position = greatest(relay_log_cursors.position, excluded.position)
                        RETURNING 1
                        """, logger: logger)
                }
                var any = false
                for try await _ in rows { any = true }
                return any
            }
        } catch {
            throw .storeUnavailable("writing cursor \(name) of stream \(stream): \(error)")
        }
        guard moved else {
            throw .storeUnavailable("cursor \(name) of stream \(stream) not moved: this relay does not hold the stream's lease now")
        }
    }

    func read(_ name: String) async throws(LogError) -> UInt64? {
        let stream = self.stream
        do {
            return try await link.run { connection, logger in
                var position: UInt64?
                for try await stored in try await connection.query(
                    "SELECT position FROM relay_log_cursors WHERE stream = \(stream) AND consumer = \(name)", logger: logger
                ).decode(Int64.self) {
                    position = UInt64(bitPattern: stored)
                }
                return position
            }
        } catch {
            throw .storeUnavailable("reading cursor \(name) of stream \(stream): \(error)")
        }
    }

    func remove(_ name: String) async throws(LogError) {
        let stream = self.stream
        do {
            try await link.run { connection, logger in
                try await connection.query("DELETE FROM relay_log_cursors WHERE stream = \(stream) AND consumer = \(name)", logger: logger)
            }
        } catch {
            throw .storeUnavailable("removing cursor \(name) of stream \(stream): \(error)")
        }
    }
}
