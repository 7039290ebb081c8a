package import RelayCore
import RelayLog

/// What counting one batch of log events adds to the aggregates, computed once, whichever backend
/// applies it (SQLite's ``Aggregator``, PostgreSQL's fleet aggregator).
///
/// A backend applies a batch in one transaction that also moves its position past the batch:
/// 1. it gives each of ``deliveries`` a row (its `delivery_ref`);
/// 2. it inserts ``messages`` into its table of distinct messages, and the sightings whose insert
///    was new are that delivery's uniques (``uniques(new:)``);
/// 3. it inserts ``tokens`` likewise, and the new ones are the app's distinct tokens
///    (``distinctTokens(newTokenApps:)``);
/// 4. it adds ``deliveries``, ``registrations`` and, where it keeps them, ``origins`` to their rows.
///
/// Every list is sorted and distinct, so every relay of a fleet inserts keys in the same order
/// (two transactions never wait for each other in a cycle) and SQLite walks its indexes page by
/// page. A copy of an earlier entry (an event with an ``Event/origin``, a re-queued dead letter)
/// was counted as that entry, and counts nothing.
///
/// Adding a metric means a field here, filled in ``init(_:)``, and a column in each backend's
/// upsert: the reduction is not written twice.
package struct CountDeltas: Sendable {
    /// A tracking action's index: 0 impressions, 1 opens, 2 clicks, the column order of both schemas.
    package static func actionIndex(_ action: TrackingAction) -> Int {
        switch action {
        case .impression: 0
        case .open: 1
        case .click: 2
        }
    }

    /// A message as Campaign counts it: the 64-bit value of a numeric id (so `55336`, `055336` and
    /// `hd828` are one message), the lower-cased text of a UUID.
    package enum MessageKey: Sendable, Hashable, Comparable {
        /// A numeric id's value.
        case integer(Int64)
        /// A UUID in lower case.
        case uuid(String)
    }

    /// What a delivery is counted by: its tenant and its id. The same delivery id under two
    /// tenants is two deliveries (two Campaign instances number their deliveries apart).
    package struct DeliveryKey: Sendable, Hashable, Comparable {
        /// The tenant's name, `""` for the default tenant (as both schemas store it).
        package var tenant: String
        /// The delivery id (`_dId`).
        package var deliveryId: String

        /// The delivery `deliveryId` of `tenant` (`""`: the default tenant).
        package init(tenant: String, deliveryId: String) {
            self.tenant = tenant
            self.deliveryId = deliveryId
        }

        package static func < (left: DeliveryKey, right: DeliveryKey) -> Bool {
            (left.tenant, left.deliveryId) < (right.tenant, right.deliveryId)
        }
    }

    /// One delivery's totals in the batch.
    package struct Delivery: Sendable, Hashable {
        /// The delivery's tenant and id.
        package var key: DeliveryKey
        /// The tenant's name, `""` for the default tenant.
        package var tenant: String { key.tenant }
        /// The delivery id (`_dId`).
        package var deliveryId: String { key.deliveryId }
        /// Impressions, opens and clicks (by ``CountDeltas/actionIndex(_:)``; the fourth lane is unused).
        package var totals: SIMD4<Int64> = .zero
        /// The earliest and latest event time, in nanoseconds since the Unix epoch.
        package var first = Int64.max
        package var last = Int64.min
    }

    /// A message seen with an action of a delivery; each appears once per batch.
    package struct MessageSighting: Sendable, Hashable {
        /// The index of its delivery in ``CountDeltas/deliveries``.
        package var delivery: Int
        /// The action's index (``CountDeltas/actionIndex(_:)``).
        package var action: Int
        /// The message.
        package var key: MessageKey

        /// A sighting of `key` with `action` of the delivery at `delivery`.
        package init(delivery: Int, action: Int, key: MessageKey) {
            self.delivery = delivery
            self.action = action
            self.key = key
        }
    }

    /// An app on a platform, of a tenant: what registrations are counted by.
    package struct App: Sendable, Hashable, Comparable {
        /// The tenant's name, `""` for the default tenant.
        package var tenant: String
        /// The integration key (`mobileAppUuid`).
        package var integrationKey: String
        /// The platform's raw value (`ios`, `android`), as stored.
        package var platform: String

        /// The app `integrationKey` on `platform`, of `tenant` (`""`: the default tenant).
        package init(tenant: String = "", integrationKey: String, platform: String) {
            self.tenant = tenant
            self.integrationKey = integrationKey
            self.platform = platform
        }

        package static func < (left: App, right: App) -> Bool {
            (left.tenant, left.integrationKey, left.platform) < (right.tenant, right.integrationKey, right.platform)
        }
    }

    /// One app's registrations in the batch.
    package struct Registrations: Sendable, Hashable {
        /// The app.
        package var app: App
        /// Registrations (every one, repeated tokens included).
        package var registrations: Int64 = 0
        /// The earliest and latest event time, in nanoseconds since the Unix epoch.
        package var first = Int64.max
        package var last = Int64.min
    }

    /// A registration token seen for an app; each appears once per batch.
    package struct TokenSighting: Sendable, Hashable {
        /// The index of its app in ``CountDeltas/registrations``.
        package var app: Int
        /// The token's digest (``TokenDigest``).
        package var token: String

        /// A sighting of `token` for the app at `app`.
        package init(app: Int, token: String) {
            self.app = app
            self.token = token
        }
    }

    /// A first origin and the relay that handed its events to this one (`""` when they came
    /// straight from the origin).
    package struct OriginKey: Sendable, Hashable, Comparable {
        /// The relay that first logged the events.
        package var relayID: String
        /// The relay in between, or `""`.
        package var via: String

        /// The origin `relayID` through `via`.
        package init(relayID: String, via: String) {
            self.relayID = relayID
            self.via = via
        }

        package static func < (left: OriginKey, right: OriginKey) -> Bool { (left.relayID, left.via) < (right.relayID, right.via) }
    }

    /// What one origin's events add.
    package struct Origin: Sendable, Hashable {
        /// The origin.
        package var key: OriginKey
        /// Events, and of them tracking hits and registrations.
        package var events: Int64 = 0
        package var hits: Int64 = 0
        package var registrations: Int64 = 0
        /// The newest origin epoch seen, and the highest origin sequence seen in it.
        package var epoch: UInt32 = 0
        package var lastSequence: UInt64 = 0
        /// The earliest and latest event time, in nanoseconds since the Unix epoch.
        package var first = Int64.max
        package var last = Int64.min

        mutating func record(_ event: Event, at position: RelayPosition) {
            events += 1
            if case .tracking = event { hits += 1 } else { registrations += 1 }
            if position.epoch > epoch || (position.epoch == epoch && position.sequence > lastSequence) {
                epoch = position.epoch
                lastSequence = position.sequence
            }
            first = min(first, event.time.nanosecondsSinceEpoch)
            last = max(last, event.time.nanosecondsSinceEpoch)
        }
    }

    /// Per delivery, sorted by tenant, then delivery id.
    package private(set) var deliveries: [Delivery] = []
    /// Distinct (delivery, action, message), sorted in that order.
    package private(set) var messages: [MessageSighting] = []
    /// Per app, sorted by app (tenant, integration key, platform).
    package private(set) var registrations: [Registrations] = []
    /// Distinct (app, token), sorted in that order.
    package private(set) var tokens: [TokenSighting] = []
    /// Per origin of events handed on by other relays, sorted by origin.
    package private(set) var origins: [Origin] = []
    /// Events counted (copies of earlier entries are not).
    package private(set) var events = 0
    /// The sequence numbers of erased registrations met (``RelayCore/ErasedEntry``): counted for
    /// nothing, and recorded so that an erasure never takes them out of the counts again.
    package private(set) var erasedSequences: [UInt64] = []

    /// Reduces `batch`.
    package init(_ batch: some Sequence<SequencedEvent>) {
        var deliveryIndex: [DeliveryKey: Int] = [:]
        var deliveries: [Delivery] = []
        // The messages of each delivery's action (at `index * 3 + action`), integers and UUIDs
        // apart: sorting each bucket's integers is far cheaper than sorting every sighting.
        var integerKeys: [[Int64]] = []
        var uuidKeys: [[String]] = []
        var appIndex: [App: Int] = [:]
        var registrations: [Registrations] = []
        var tokens: [TokenSighting] = []
        var originIndex: [OriginKey: Int] = [:]
        var origins: [Origin] = []
        for sequenced in batch where sequenced.event.origin == nil {
            if case .erased = sequenced.event {
                erasedSequences.append(sequenced.sequence)
                continue
            }
            events += 1
            let event = sequenced.event
            if let chain = event.chain {
                let key = OriginKey(relayID: chain.first.relayID, via: chain.hop?.relayID ?? "")
                let index = originIndex[key] ?? origins.count
                if index == origins.count {
                    originIndex[key] = index
                    origins.append(Origin(key: key))
                }
                origins[index].record(event, at: chain.first)
            }
            switch event {
            case .tracking(let hit):
                let key = DeliveryKey(tenant: hit.tenant.storedName, deliveryId: hit.deliveryId)
                let index = deliveryIndex[key] ?? deliveries.count
                if index == deliveries.count {
                    deliveryIndex[key] = index
                    deliveries.append(Delivery(key: key))
                    integerKeys.append(contentsOf: [[], [], []])
                    uuidKeys.append(contentsOf: [[], [], []])
                }
                let action = Self.actionIndex(hit.action)
                let time = hit.time.nanosecondsSinceEpoch
                deliveries[index].totals[action] += 1
                deliveries[index].first = min(deliveries[index].first, time)
                deliveries[index].last = max(deliveries[index].last, time)
                switch hit.messageId.identity {
                case .integer(let value): integerKeys[index * 3 + action].append(value)
                case .uuid(let text): uuidKeys[index * 3 + action].append(text)
                }
            case .erased:
                break
            case .registration(let registration):
                let app = App(
                    tenant: registration.tenant.storedName, integrationKey: registration.integrationKey, platform: registration.platform.rawValue)
                let index = appIndex[app] ?? registrations.count
                if index == registrations.count {
                    appIndex[app] = index
                    registrations.append(Registrations(app: app))
                }
                let time = registration.time.nanosecondsSinceEpoch
                registrations[index].registrations += 1
                registrations[index].first = min(registrations[index].first, time)
                registrations[index].last = max(registrations[index].last, time)
                // Compared, never read back: the aggregates keep no token in the clear.
                tokens.append(TokenSighting(app: index, token: TokenDigest.hex(registration.registrationToken)))
            }
        }
        // Indexes were handed out in order of first sighting; renumber them in key order.
        let deliveryOrder = deliveries.indices.sorted { deliveries[$0].key < deliveries[$1].key }
        self.deliveries = deliveryOrder.map { deliveries[$0] }
        var messages: [MessageSighting] = []
        messages.reserveCapacity(integerKeys.reduce(0) { $0 + $1.count } + uuidKeys.reduce(0) { $0 + $1.count })
        for (rank, index) in deliveryOrder.enumerated() {
            for action in 0..<3 {
                // MessageKey's order: integers by value, then UUIDs by text.
                var integers = integerKeys[index * 3 + action]
                integers.sort()
                for value in Self.distinct(integers) {
                    messages.append(MessageSighting(delivery: rank, action: action, key: .integer(value)))
                }
                var uuids = uuidKeys[index * 3 + action]
                uuids.sort()
                for text in Self.distinct(uuids) {
                    messages.append(MessageSighting(delivery: rank, action: action, key: .uuid(text)))
                }
            }
        }
        self.messages = messages

        let appOrder = registrations.indices.sorted { registrations[$0].app < registrations[$1].app }
        let appRank = Self.ranks(of: appOrder)
        self.registrations = appOrder.map { registrations[$0] }
        for index in tokens.indices { tokens[index].app = appRank[tokens[index].app] }
        tokens.sort { $0.app != $1.app ? $0.app < $1.app : $0.token < $1.token }
        self.tokens = Self.distinct(tokens)

        self.origins = origins.sorted { $0.key < $1.key }
    }

    /// The uniques each delivery gains (by index in ``deliveries``, lanes by action), given the
    /// delivery index and action of each sighting that the backend's table of distinct messages
    /// did not hold yet.
    package func uniques(new sightings: some Sequence<(delivery: Int, action: Int)>) -> [SIMD4<Int64>] {
        var uniques = [SIMD4<Int64>](repeating: .zero, count: deliveries.count)
        for sighting in sightings { uniques[sighting.delivery][sighting.action] += 1 }
        return uniques
    }

    /// The distinct tokens each app gains (by index in ``registrations``), given the app index of
    /// each token that the backend's table of tokens did not hold yet.
    package func distinctTokens(newTokenApps apps: some Sequence<Int>) -> [Int64] {
        var distinct = [Int64](repeating: 0, count: registrations.count)
        for app in apps { distinct[app] += 1 }
        return distinct
    }

    /// The key both schemas store a delivery's action under in their tables of distinct
    /// messages: `delivery_ref * 4 + action` (docs/aggregates.md, docs/aggregates-postgres.md).
    package static func deliveryAction(reference: Int64, action: Int) -> Int64 { reference &* 4 &+ Int64(action) }

    /// `ranks[i]`: where the element at `i` stands in `order`.
    private static func ranks(of order: [Int]) -> [Int] {
        var ranks = [Int](repeating: 0, count: order.count)
        for (rank, index) in order.enumerated() { ranks[index] = rank }
        return ranks
    }

    /// `sorted` without repeats.
    private static func distinct<Element: Equatable>(_ sorted: [Element]) -> [Element] {
        var result: [Element] = []
        result.reserveCapacity(sorted.count)
        for element in sorted where result.last != element { result.append(element) }
        return result
    }
}
