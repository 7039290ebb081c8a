public import Logging
import PostgresNIO

/// Keeps this relay's place among the relays sharing one log database: its heartbeat, the lease
/// on its own stream's forwarding, the leases of the streams it adopted, and the search for
/// streams whose relay stopped (docs/high-availability.md).
///
/// Every `lease / 3` it:
/// 1. marks its own stream alive (`alive_until = now() + lease`) and takes or renews the lease
///    on it (a lease held by another is left alone: an adopter hands it back first);
/// 2. reads how many copies a commit makes (``LogDurability``);
/// 3. renews each adopted stream's lease, and hands back those whose relay is alive again: it
///    stops their lanes first (``Adoption/handBack``), then releases the lease;
/// 4. takes the lease of every stream whose relay is not alive and whose lease has ended, and
///    starts forwarding it (``Adoption/adopt``).
///
/// Time on the database's side is the database's clock (`now()`); on this side, the fence's
/// monotonic deadlines (``StreamLeaseFence``). A failed round changes nothing but the fence's
/// deadlines, which then run out on their own.
public actor StreamLeases {
    /// What adopting a stream starts and handing it back stops, supplied by the server.
    public struct Adoption: Sendable {
        /// Starts forwarding (and counting) `stream`, whose lease this relay now holds; `false`
        /// when it could not (the lease is then released, and a later round tries again).
        public var adopt: @Sendable (String) async -> Bool
        /// Stops forwarding `stream` and returns once no request of its lanes is in flight.
        public var handBack: @Sendable (String) async -> Void
        /// Called when this relay takes its own stream's lease again after another relay held it
        /// (it had adopted the stream) or it was lost, before any lane may send: masks what that
        /// holder's erasures left unfinished. `false` when that could not be read (the lease is
        /// then not used this round).
        public var reclaiming: @Sendable () async -> Bool
        /// Called once the lease is in force again (after ``reclaiming``): finishes those erasures.
        public var reclaimed: @Sendable () async -> Void

        /// Hooks from their parts.
        public init(
            adopt: @escaping @Sendable (String) async -> Bool, handBack: @escaping @Sendable (String) async -> Void,
            reclaiming: @escaping @Sendable () async -> Bool = { true }, reclaimed: @escaping @Sendable () async -> Void = {}
        ) {
            self.adopt = adopt
            self.handBack = handBack
            self.reclaiming = reclaiming
            self.reclaimed = reclaimed
        }
    }

    /// This relay's stream.
    public nonisolated let stream: String
    /// The lease's length (`--lease-seconds`).
    public nonisolated let lease: Duration
    /// The leases held, for lanes and cursors.
    public nonisolated let fence: StreamLeaseFence
    /// How many copies an acknowledgement means.
    public nonisolated let durability: LogDurability
    /// This process among all relays: the name and a random part, so that a relay restarted
    /// under the same name never renews its predecessor's lease.
    nonisolated let holder: String
    private let link: PostgresLink
    private let logger: Logger
    private var adoption: Adoption?
    /// Streams adopted here (those being handed back included, until their lanes have stopped).
    private(set) var adopted: Set<String> = []
    /// Streams being handed back: their lanes stop (in a task of their own, however long that
    /// takes) while the rounds go on renewing every lease, so that no lease runs out meanwhile
    /// and the lanes' last cursors are saved under it; the lease is released once they stopped.
    private var handingBack: [String: Task<Void, Never>] = [:]
    private var ownHeld = false
    /// Whether a round has run: the lease taken in a later one reclaims the stream.
    private var pastFirstRound = false
    /// When a round last failed: for a lease after it, this relay adopts nothing, so that after an
    /// outage longer than the lease each relay takes its own stream back before any adopts another's.
    private var lastFailure: ContinuousClock.Instant?

    /// This process's writer generation of its stream: another process opening the stream as its
    /// writer takes a newer one, and this relay then gives up its lease (it appends no more).
    private var writer: Int64 = 0

    /// The leases of `stream`'s relay on the log database at `location`.
    public init(location: PostgresLocation, stream: String, lease: Duration, durability: LogDurability, logger: Logger) {
        self.stream = stream
        self.lease = lease
        self.fence = StreamLeaseFence()
        self.durability = durability
        self.holder = "\(stream)/\(UInt64.random(in: 0...UInt64.max))"
        self.link = PostgresLink(location: location, deadline: max(.seconds(1), lease / 3), logger: location.quietLogger)
        self.logger = logger
    }

    /// The writer generation the log took when it opened (``PostgresLog/Opened/writer``).
    public func setWriter(_ generation: Int64) {
        writer = generation
    }

    /// Sets what adopting and handing back do (before ``run()``).
    public func setAdoption(_ adoption: Adoption) {
        self.adoption = adoption
    }

    /// Runs rounds until cancelled, then hands back every adopted stream and releases the leases.
    public func run() async {
        while !Task.isCancelled {
            await round()
            try? await Task.sleep(for: lease / 3)
        }
        for stream in adopted.sorted() { await handBack(stream) }
        // Stopping: this stream is left to the others at once, not after the lease runs out.
        fence.lost(stream)
        let own = stream
        _ = try? await link.run { connection, logger in
            try await connection.query(
                "UPDATE relay_log_streams SET alive_until = now() - interval '1 second' WHERE stream = \(own)", logger: logger)
        }
        if ownHeld { await release(stream) }
        await link.close()
    }

    /// One round (see the type's description).
    public func round() async {
        defer { pastFirstRound = true }
        let sent = ContinuousClock.now
        let (stream, holder, seconds, writer) = (self.stream, self.holder, Double(lease.components.seconds), self.writer)
        do {
            let (token, reading) = try await link.run { connection, logger in
                // Alive, and the lease, only while this process is the stream's writer.
                var isWriter = false
                for try await _ in try await connection.query(
                    """
                    UPDATE relay_log_streams SET alive_until = now() + make_interval(secs => \(seconds))
                    WHERE stream = \(stream) AND writer = \(writer) RETURNING 1
                    """, logger: logger)
                {
                    isWriter = true
                }
                let token = isWriter ? try await Self.acquire(stream, holder: holder, seconds: seconds, on: connection, logger: logger) : nil
                if !isWriter {
                    try await connection.query(
                        "UPDATE relay_log_leases SET expires_at = now() - interval '1 second' WHERE stream = \(stream) AND holder = \(holder)",
                        logger: logger)
                }
                return (token, try await LogDurability.read(on: connection, logger: logger))
            }
            durability.update { current in current = reading }
            if let token {
                // Taken after the first round (which follows the log's open, where the plans were
                // read): a holder meanwhile may have left erasures of this stream unfinished.
                let reclaims = !ownHeld && pastFirstRound
                if reclaims, let adoption, await !adoption.reclaiming() {
                    logger.warning(
                        "could not read this stream's unfinished erasures; forwarding waits for the next lease round",
                        metadata: ["stream": "\(stream)"])
                    return
                }
                if !ownHeld { logger.notice("forwarding this relay's stream: its lease is ours", metadata: ["stream": "\(stream)"]) }
                fence.granted(stream, holder: holder, token: token, sentAt: sent, lease: lease)
                ownHeld = true
                if reclaims, let adoption { Task { await adoption.reclaimed() } }
            } else {
                if ownHeld {
                    logger.warning(
                        "another relay holds this relay's stream's lease; forwarding waits until it hands it back", metadata: ["stream": "\(stream)"])
                }
                fence.lost(stream)
                ownHeld = false
            }
        } catch {
            lastFailure = .now
            durability.update { $0.lastError = "\(error)" }
            logger.warning("the log database did not answer the lease round; lanes stop when the lease runs out", metadata: ["error": "\(error)"])
            return
        }
        await renewAdopted()
        await adoptAbandoned()
    }

    private func renewAdopted() async {
        let (holder, seconds) = (self.holder, Double(lease.components.seconds))
        for other in adopted.sorted() {
            let sent = ContinuousClock.now
            do {
                let (token, ownerAlive) = try await link.run { connection, logger in
                    let token = try await Self.acquire(other, holder: holder, seconds: seconds, on: connection, logger: logger)
                    var alive = false
                    for try await fresh in try await connection.query(
                        "SELECT coalesce(alive_until > now(), false) FROM relay_log_streams WHERE stream = \(other)", logger: logger
                    ).decode(Bool.self) {
                        alive = fresh
                    }
                    return (token, alive)
                }
                guard let token else {
                    logger.warning("lost the lease of an adopted stream; its lanes stop", metadata: ["stream": "\(other)"])
                    fence.lost(other)
                    startHandBack(other, release: false)
                    continue
                }
                fence.granted(other, holder: holder, token: token, sentAt: sent, lease: lease)
                if ownerAlive, handingBack[other] == nil {
                    logger.notice("the relay of an adopted stream is back; handing the stream back", metadata: ["stream": "\(other)"])
                    startHandBack(other, release: true)
                }
            } catch {
                logger.warning("could not renew an adopted stream's lease", metadata: ["stream": "\(other)", "error": "\(error)"])
            }
        }
    }

    /// Stops `other`'s lanes in a task of its own; once they stopped, the stream is no longer
    /// adopted here and (when `release`) its lease goes.
    private func startHandBack(_ other: String, release: Bool) {
        guard handingBack[other] == nil, let adoption else { return }
        handingBack[other] = Task {
            await adoption.handBack(other)
            await self.handedBack(other, release: release)
        }
    }

    private func handedBack(_ other: String, release: Bool) async {
        handingBack[other] = nil
        adopted.remove(other)
        fence.lost(other)
        if release { await self.release(other) }
    }

    private func adoptAbandoned() async {
        guard let adoption else { return }
        if let lastFailure, ContinuousClock.now - lastFailure < lease { return }
        let (own, holder, seconds) = (stream, self.holder, Double(lease.components.seconds))
        let sent = ContinuousClock.now
        let taken: [(String, Int64)]
        do {
            taken = try await link.run { connection, logger in
                var candidates: [String] = []
                for try await name in try await connection.query(
                    """
                    SELECT s.stream FROM relay_log_streams s LEFT JOIN relay_log_leases l ON l.stream = s.stream
                    WHERE s.stream <> \(own) AND (s.alive_until IS NULL OR s.alive_until < now())
                      AND (l.stream IS NULL OR l.expires_at < now())
                    ORDER BY s.stream
                    """, logger: logger
                ).decode(String.self) {
                    candidates.append(name)
                }
                var taken: [(String, Int64)] = []
                for name in candidates {
                    if let token = try await Self.acquire(name, holder: holder, seconds: seconds, on: connection, logger: logger) {
                        taken.append((name, token))
                    }
                }
                return taken
            }
        } catch {
            logger.warning("could not look for streams to adopt", metadata: ["error": "\(error)"])
            return
        }
        for (name, token) in taken where !adopted.contains(name) {
            // A relay that is stopping adopts nothing: it would hand the stream back at once.
            guard !Task.isCancelled else {
                await release(name)
                continue
            }
            fence.granted(name, holder: holder, token: token, sentAt: sent, lease: lease)
            logger.notice("adopted the stream of a relay that stopped; forwarding what it owes", metadata: ["stream": "\(name)"])
            guard await adoption.adopt(name) else {
                fence.lost(name)
                await release(name)
                continue
            }
            adopted.insert(name)
        }
    }

    /// Hands `other` back at once (stopping): waits for its lanes, then releases its lease.
    private func handBack(_ other: String) async {
        if let under = handingBack[other] {
            await under.value
            return
        }
        await adoption?.handBack(other)
        await handedBack(other, release: true)
    }

    private func release(_ name: String) async {
        let holder = self.holder
        do {
            try await link.run { connection, logger in
                try await connection.query(
                    "UPDATE relay_log_leases SET expires_at = now() - interval '1 second' WHERE stream = \(name) AND holder = \(holder)",
                    logger: logger)
            }
        } catch {
            logger.warning("could not release a stream's lease; it runs out on its own", metadata: ["stream": "\(name)", "error": "\(error)"])
        }
    }

    /// Takes or renews `stream`'s lease for `holder`: granted when it holds it already or the
    /// lease has ended; the token goes up whenever the holder changes. Returns the token, or `nil`
    /// when another holds it.
    static func acquire(_ stream: String, holder: String, seconds: Double, on connection: PostgresConnection, logger: Logger) async throws -> Int64? {
        var token: Int64?
        for try await granted in try await connection.query(
            """
            INSERT INTO relay_log_leases AS l (stream, holder, token, expires_at)
            VALUES (\(stream), \(holder), 1, now() + make_interval(secs => \(seconds)))
            ON CONFLICT (stream) DO UPDATE SET
                token = CASE WHEN l.holder = excluded.holder THEN l.token ELSE l.token + 1 END,
                holder = excluded.holder, expires_at = excluded.expires_at
            WHERE l.holder = excluded.holder OR l.expires_at < now()
            RETURNING token
            """, logger: logger
        ).decode(Int64.self) {
            token = granted
        }
        return token
    }
}
