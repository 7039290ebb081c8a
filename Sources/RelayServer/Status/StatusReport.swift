import RelayAggregates
import RelayAggregator
import RelayCore
import RelayForwarding
import RelayPostgres

/// `GET /v1/status`: what the status page shows, in one object (docs/openapi.yaml, `Status`).
/// Absent members are unknown or not configured (no aggregator, no fdatasync in the last minute).
struct StatusReport: Encodable {
    struct Intake: Encodable {
        /// Events made durable per second over the last 10 s.
        var eventsPerSecond: Double?
        var lastDurableSequence: UInt64
    }

    struct Log: Encodable {
        /// Bytes of segment headers and frames (what --max-wal-bytes limits).
        var dataBytes: Int64
        /// Bytes the segment files take, preallocation included.
        var diskBytes: Int64
        /// --max-wal-bytes, when set.
        var quotaBytes: Int64?
        /// `dataBytes / quotaBytes`, when there is a quota.
        var quotaUsed: Double?
        var segments: Int
        /// The first sequence kept, and its event's time: the range a replay can still reach.
        var oldestSequence: UInt64
        var firstEventTime: String?
        /// --retain, --retain-bytes and --archive-dir: how long, and within what, passed segments stay.
        var retainSeconds: Double
        var retainBytes: Int64?
        var archiveDirectory: String?
        /// Passed segments that left the log since the relay started.
        var segmentsRemoved: Int
        /// Where the log is (`files` or `postgresql`) and how many machines an acknowledgement is
        /// on, as the database's settings and its streaming standbys say.
        var durability: LogDurability.Reading

        enum CodingKeys: String, CodingKey {
            case dataBytes, diskBytes, quotaBytes, quotaUsed, segments, oldestSequence, firstEventTime, retainSeconds, retainBytes
            case archiveDirectory, segmentsRemoved
            case store, copies, synchronousCommit, synchronousStandbyNames, synchronousStandbys, storeError
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(dataBytes, forKey: .dataBytes)
            try container.encode(diskBytes, forKey: .diskBytes)
            try container.encodeIfPresent(quotaBytes, forKey: .quotaBytes)
            try container.encodeIfPresent(quotaUsed, forKey: .quotaUsed)
            try container.encode(segments, forKey: .segments)
            try container.encode(oldestSequence, forKey: .oldestSequence)
            try container.encodeIfPresent(firstEventTime, forKey: .firstEventTime)
            try container.encode(retainSeconds, forKey: .retainSeconds)
            try container.encodeIfPresent(retainBytes, forKey: .retainBytes)
            try container.encodeIfPresent(archiveDirectory, forKey: .archiveDirectory)
            try container.encode(segmentsRemoved, forKey: .segmentsRemoved)
            try container.encode(durability.store, forKey: .store)
            try container.encode(durability.copies, forKey: .copies)
            try container.encodeIfPresent(durability.synchronousCommit, forKey: .synchronousCommit)
            try container.encodeIfPresent(durability.synchronousStandbyNames, forKey: .synchronousStandbyNames)
            try container.encodeIfPresent(durability.synchronousStandbys, forKey: .synchronousStandbys)
            try container.encodeIfPresent(durability.lastError, forKey: .storeError)
        }
    }

    struct Destination: Encodable {
        /// Its sink's kind's label: `tracking`, `marketing` or `relay`.
        var name: String
        /// The tenant whose events it takes (`default`), or `*` for a destination that takes every
        /// tenant's (the central relay).
        var tenant: String
        var url: String
        var backlog: UInt64
        /// The event time of the oldest event the destination is owed, and its age in seconds.
        var oldestUnsentEvent: String?
        var oldestUnsentSeconds: Double?
        /// `closed`, `open` or `half-open` (`closed` while any of its hosts' breakers is); for a
        /// destination that hands events on (the central relay) `reachable` or `unreachable`.
        var breaker: String
        var lastError: String?
        var lastErrorAt: String?
        var deliveredPerSecond: Double?
        var delivered: Int?
        /// The requests in flight to its first host and their limit (a destination that delivers).
        var concurrency: Concurrency?
        /// Each of its hosts, the first then the spares (a destination that delivers).
        var hosts: [Host]?
    }

    /// One host of a destination: its breaker and its requests in flight.
    struct Host: Encodable {
        var url: String
        /// `closed`, `open` or `half-open`.
        var breaker: String
        var concurrency: Concurrency

        init(_ state: HostState) {
            url = state.url
            breaker = state.breaker
            concurrency = Concurrency(state.concurrency)
        }
    }

    /// The requests in flight to a destination's host, under the limit its answers set
    /// (``RelayForwarding/ConcurrencyLimiter``).
    struct Concurrency: Encodable {
        /// Requests in flight now.
        var inFlight: Int
        /// Requests in flight allowed now.
        var limit: Int
        /// The most allowed (`--concurrency`).
        var ceiling: Int
        /// Whether the limit adapts to the host's answers (the default; `--no-adaptive-concurrency`: fixed).
        var adaptive: Bool
        /// The mean round trip of the last window with answers, and the baseline it is compared
        /// with: the fastest window mean of the last 10 s (adaptive only).
        var roundTripSeconds: Double?
        var roundTripBaselineSeconds: Double?
        /// Requests started per second at most (`max-rate`); absent without a ceiling.
        var maximumRate: Int?
        /// Whether the rate ceiling held a request back within the last second.
        var paced: Bool

        init(_ snapshot: ConcurrencyLimiter.Snapshot) {
            inFlight = snapshot.inFlight
            limit = snapshot.limit
            ceiling = snapshot.ceiling
            adaptive = snapshot.adaptive
            roundTripSeconds = snapshot.roundTrip.map(\.seconds)
            roundTripBaselineSeconds = snapshot.baseline.map(\.seconds)
            maximumRate = snapshot.maximumRate
            paced = snapshot.paced
        }
    }

    struct Counting: Encodable {
        /// `sqlite` (the aggregates file) or `postgres` (the fleet's database).
        var store: String
        /// Durable events not counted yet.
        var lag: UInt64?
        var lastError: String?
    }

    struct Fsync: Encodable {
        var p50Seconds: Double?
        var p99Seconds: Double?
        /// fdatasyncs in the last minute.
        var commits: Int
    }

    var generatedAt: String
    var relayId: String
    var epoch: UInt32
    var version: String
    var intake: Intake
    var log: Log
    var destinations: [Destination]
    var deadLetters: Int?
    var counting: [Counting]
    /// Registrations per app (integration key and platform) of the tenant shown, the most
    /// recently active first: what `campaign-relay stats` prints under its deliveries, from this
    /// relay's `aggregates.sqlite`. Absent when the relay does not count (`--no-aggregates`) or
    /// its counts cannot be read yet.
    var registrations: [RegistrationCounts]?
    var fsync: Fsync
}
