import NIOCore
import NIOPosix
import TestTiers
import Testing

@testable import RelayPostgres

/// The log's link to PostgreSQL gives up connecting at its connect deadline, before PostgresNIO's
/// own timeout of each host would, when the server takes the connection and never speaks.
@Suite("PostgreSQL link deadlines", .timeLimit(.minutes(2)), .tier(.fast))
struct PostgresLinkDeadlineTests {
    @Test("a server that accepts and never answers the startup: run fails with the connect deadline named, and again on the next call")
    func silentServer() async throws {
        // Accepts every connection and drops what it is sent: PostgresNIO waits for an
        // authentication request that never comes.
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { $0.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(silent.localAddress?.port)
        let location = try PostgresLocation(url: "postgres://relay@127.0.0.1:\(port)/relay?sslmode=disable")
        let link = PostgresLink(location: location, deadline: .seconds(5), connectDeadline: .milliseconds(300), logger: location.quietLogger)
        for _ in 1...2 {
            let failure = await #expect(throws: FleetError.self) { try await link.run { _, _ in 1 } }
            #expect("\(failure.map { String(describing: $0) } ?? "")".contains("within 0.3 seconds"), "\(String(describing: failure))")
        }
        await link.close()
        try await silent.close()
    }
}
