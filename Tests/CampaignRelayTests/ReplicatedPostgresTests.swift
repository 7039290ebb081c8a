import Foundation
import RelayTestSupport
import TestTiers
import Testing

/// The replicated cluster the high-availability tests stand on (``ReplicatedTestPostgres``),
/// checked by itself: if the standby were not synchronous, a row committed on the primary just
/// before its death could be missing after the failover, and the relay tests above it would
/// blame the relay.
@Suite("A replicated PostgreSQL for tests", .serialized, .timeLimit(.minutes(5)), .tier(.thorough))
struct ReplicatedPostgresTests {
    @Test("a commit is on the synchronous standby; after kill -9 of the primary and promotion the row is there and the new primary takes writes")
    func failover() async throws {
        let cluster = try await ReplicatedTestPostgres.start()
        do {
            try await check(cluster)
        } catch {
            await cluster.destroy()
            throw error
        }
        await cluster.destroy()
    }

    func check(_ cluster: ReplicatedTestPostgres) async throws {
        let states = try await cluster.primary.psql(
            "SELECT application_name || ' ' || state || ' ' || sync_state FROM pg_stat_replication")
        #expect(states == "\(ReplicatedTestPostgres.standbyName) streaming sync", "pg_stat_replication: \(states)")
        #expect(try await cluster.standby.psql("SELECT pg_is_in_recovery()") == "t")

        _ = try await cluster.primary.psql("CREATE TABLE marks (id integer PRIMARY KEY, note text)")
        // A commit that returned is on the standby: synchronous_commit = on waits for its flush,
        // and the replay that makes it visible follows within moments.
        _ = try await cluster.primary.psql("INSERT INTO marks VALUES (1, 'before the kill')")
        try await waitForRow(cluster.standby, "the committed row replayed on the standby")

        // The last commit before the kill: acknowledged by the primary only once the standby had
        // it, so it must survive the primary's death even with no time left to send anything.
        _ = try await cluster.primary.psql("INSERT INTO marks VALUES (2, 'the last commit')")
        try await cluster.killPrimary()
        await #expect(throws: (any Error).self, "the killed primary must refuse connections") {
            try await cluster.primary.psql("SELECT 1")
        }
        try await cluster.promoteStandby()
        #expect(try await cluster.standby.psql("SELECT string_agg(id::text, ',' ORDER BY id) FROM marks") == "1,2")
        _ = try await cluster.standby.psql("INSERT INTO marks VALUES (3, 'after the promotion')")
        #expect(try await cluster.standby.psql("SELECT count(*) FROM marks") == "3")
        #expect(cluster.url.contains("target_session_attrs=read-write") && cluster.url.contains(",127.0.0.1:\(cluster.standby.port)/"))
    }

    /// Waits up to 30 s for row 1 on `server`.
    func waitForRow(_ server: TestPostgres, _ what: String) async throws {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if (try? await server.psql("SELECT count(*) FROM marks WHERE id = 1")) == "1" { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("waited 30 s for \(what)")
    }
}
