import RelayAggregates
import RelayAggregator
import RelayCore
import RelayLog
import RelayTestSupport
import TestTiers
import Testing

/// The one count reduction that SQLite's and PostgreSQL's aggregators both apply.
@Suite("Count deltas: a batch reduced once for every backend", .tier(.fast))
struct CountDeltasTests {
    static let base: Int64 = 1_795_255_200_000_000_000

    static func hit(_ action: TrackingAction, _ id: String, _ delivery: String, at offset: Int64) throws -> Event {
        .tracking(
            TrackingEvent(action: action, messageId: try MessageID(id), deliveryId: delivery, time: EventTime(nanosecondsSinceEpoch: base + offset)))
    }

    static func registration(_ key: String, _ platform: Platform, _ token: String, at offset: Int64) -> Event {
        .registration(
            Registration(platform: platform, integrationKey: key, registrationToken: token, time: EventTime(nanosecondsSinceEpoch: base + offset)))
    }

    static func sequenced(_ events: [Event]) -> [SequencedEvent] {
        events.enumerated().map { SequencedEvent(sequence: UInt64($0.offset + 1), event: $0.element) }
    }

    @Test("hits: totals and times per delivery, one sighting per message and action, in key order")
    func hits() throws {
        let uuid = "6F9619FF-8B86-D011-B42D-00C04FC964FF"
        var copy = try Self.hit(.click, "9", "d1", at: 0)
        copy.origin = EventOrigin(sequence: 1)
        let deltas = CountDeltas(
            Self.sequenced([
                try Self.hit(.impression, "7", "d2", at: 50),
                // 55336, 055336 and h0d828 are one message as Campaign counts them.
                try Self.hit(.open, "55336", "d1", at: 20),
                try Self.hit(.open, "055336", "d1", at: 10),
                try Self.hit(.open, "hd828", "d1", at: 40),
                try Self.hit(.click, "55336", "d1", at: 30),
                try Self.hit(.impression, "7", "d2", at: 30),
                try Self.hit(.open, uuid, "d1", at: 25),
                try Self.hit(.open, uuid.lowercased(), "d1", at: 26),
                // A re-queued dead letter was counted as the entry it copies.
                copy,
            ]))
        #expect(deltas.events == 8)
        #expect(deltas.deliveries.map(\.deliveryId) == ["d1", "d2"])
        #expect(deltas.deliveries[0].totals == [0, 5, 1])
        #expect(deltas.deliveries[0].first == Self.base + 10)
        #expect(deltas.deliveries[0].last == Self.base + 40)
        #expect(deltas.deliveries[1].totals == [2, 0, 0])
        #expect(deltas.deliveries[1].first == Self.base + 30)
        #expect(deltas.deliveries[1].last == Self.base + 50)
        #expect(
            deltas.messages == [
                CountDeltas.MessageSighting(delivery: 0, action: 1, key: .integer(55336)),
                CountDeltas.MessageSighting(delivery: 0, action: 1, key: .uuid(uuid.lowercased())),
                CountDeltas.MessageSighting(delivery: 0, action: 2, key: .integer(55336)),
                CountDeltas.MessageSighting(delivery: 1, action: 0, key: .integer(7)),
            ])
        #expect(deltas.registrations.isEmpty && deltas.tokens.isEmpty && deltas.origins.isEmpty)
        // A backend whose table already held the uuid and d2's message: d1 gains one unique open
        // and one unique click.
        #expect(deltas.uniques(new: [(delivery: 0, action: 1), (delivery: 0, action: 2)]) == [[0, 1, 1], [0, 0, 0]])
        #expect(CountDeltas.deliveryAction(reference: 5, action: 2) == 22)
    }

    @Test("registrations: per app, distinct tokens, in key order")
    func registrations() {
        let deltas = CountDeltas(
            Self.sequenced([
                Self.registration("key-b", .ios, "x", at: 9),
                Self.registration("key-b", .ios, "x", at: 3),
                Self.registration("key-a", .android, "z", at: 5),
                Self.registration("key-a", .android, "y", at: 6),
                Self.registration("key-b", .ios, "w", at: 7),
            ]))
        #expect(deltas.events == 5)
        #expect(deltas.registrations.map(\.app.integrationKey) == ["key-a", "key-b"])
        #expect(deltas.registrations.map(\.app.platform) == [Platform.android.rawValue, Platform.ios.rawValue])
        #expect(deltas.registrations.map(\.registrations) == [2, 3])
        #expect(deltas.registrations.map(\.first) == [Self.base + 5, Self.base + 3])
        #expect(deltas.registrations.map(\.last) == [Self.base + 6, Self.base + 9])
        // Tokens as their digests (the aggregates keep none in the clear), in key order.
        #expect(
            deltas.tokens
                == [(0, "y"), (0, "z"), (1, "w"), (1, "x")].map { CountDeltas.TokenSighting(app: $0.0, token: KnownDigests.sha256(of: $0.1)) }
                .sorted { ($0.app, $0.token) < ($1.app, $1.token) })
        #expect(deltas.distinctTokens(newTokenApps: [0, 1, 1]) == [1, 2])
        #expect(deltas.deliveries.isEmpty && deltas.messages.isEmpty)
    }

    @Test("origins: per first origin and hop, newest epoch and sequence")
    func origins() throws {
        let relayA = "aaaaaaaa-0000-4000-8000-000000000001"
        let relayB = "bbbbbbbb-0000-4000-8000-000000000002"
        func handed(_ event: Event, _ relay: String, epoch: UInt32, sequence: UInt64, via: String? = nil) throws -> Event {
            var event = event
            event.chain = ChainOrigin(
                first: try RelayPosition(relayID: relay, epoch: epoch, sequence: sequence),
                hop: try via.map { try RelayPosition(relayID: $0, epoch: 1, sequence: 1) })
            return event
        }
        let deltas = CountDeltas(
            Self.sequenced([
                try handed(try Self.hit(.open, "1", "d", at: 4), relayB, epoch: 2, sequence: 3),
                try handed(try Self.hit(.open, "2", "d", at: 2), relayB, epoch: 1, sequence: 90),
                try handed(Self.registration("k", .ios, "t", at: 8), relayB, epoch: 2, sequence: 4),
                try handed(try Self.hit(.open, "3", "d", at: 1), relayA, epoch: 1, sequence: 5, via: relayB),
                try Self.hit(.open, "4", "d", at: 0),
            ]))
        #expect(deltas.origins.map(\.key) == [CountDeltas.OriginKey(relayID: relayA, via: relayB), CountDeltas.OriginKey(relayID: relayB, via: "")])
        let b = try #require(deltas.origins.last)
        #expect([b.events, b.hits, b.registrations] == [3, 2, 1])
        #expect(b.epoch == 2 && b.lastSequence == 4)
        #expect(b.first == Self.base + 2 && b.last == Self.base + 8)
        #expect(deltas.origins[0].events == 1 && deltas.origins[0].lastSequence == 5)
        #expect(deltas.events == 5)
    }
}
