package import RelayCore

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
/// What it reduces comes from the ``MetricTable``: a total per delivery for each per-delivery
/// total metric, a set of distinct messages for each per-delivery unique one, a total per app for
/// each per-app total metric, the tokens for the per-app unique one. Adding a metric is a line in
/// a table, not a change here.
package struct CountDeltas: Sendable {
    /// A tracking action's index: 0 impressions, 1 opens, 2 clicks (the standard table's sets).
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
        /// One total per ``MetricTable/deliveryTotals`` metric, in that order.
        package var totals: [Int64]
        /// The earliest and latest event time, in nanoseconds since the Unix epoch.
        package var first = Int64.max
        package var last = Int64.min
    }

    /// A message seen with an action of a delivery; each appears once per batch.
    package struct MessageSighting: Sendable, Hashable {
        /// The index of its delivery in ``CountDeltas/deliveries``.
        package var delivery: Int
        /// The set's number in ``MetricTable/deliverySets`` (for the standard table, the action's
        /// index, ``CountDeltas/actionIndex(_:)``).
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
        /// One total per ``MetricTable/appTotals`` metric, in that order.
        package var totals: [Int64]
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

    /// The table whose metrics this reduction counts.
    package let table: MetricTable

    /// Reduces `batch` for the metrics of `table`; each registration token is kept as
    /// `tokenDigest` makes it (the log's `TokenDigest`: the aggregates keep no token in the clear).
    package init(_ batch: some Sequence<SequencedEvent>, table: MetricTable = .standard, tokenDigest: (String) -> String) {
        self.table = table
        let totalCount = table.deliveryTotals.count
        let setCount = table.deliverySets.count
        // The standard metrics test the action alone: by action, the totals and sets they feed.
        var actionTotals: [[Int]] = Array(repeating: [], count: TrackingAction.allCases.count)
        var actionSets: [[Int]] = Array(repeating: [], count: TrackingAction.allCases.count)
        var predicateTotals: [(Int, HitPredicate)] = []
        var predicateSets: [(Int, HitPredicate)] = []
        for (index, metric) in table.deliveryTotals.enumerated() {
            guard case .hits(let predicate) = metric.counted else { continue }
            if let action = predicate.action {
                actionTotals[Self.actionIndex(action)].append(index)
            } else {
                predicateTotals.append((index, predicate))
            }
        }
        for (set, metric) in table.deliverySets.enumerated() {
            guard case .hits(let predicate) = metric.counted else { continue }
            if let action = predicate.action { actionSets[Self.actionIndex(action)].append(set) } else { predicateSets.append((set, predicate)) }
        }
        var appPredicates: [(Int, RegistrationPredicate)] = []
        for (index, metric) in table.appTotals.enumerated() {
            if case .registrations(let predicate) = metric.counted { appPredicates.append((index, predicate)) }
        }
        var tokenPredicate: RegistrationPredicate?
        if let tokens = table.appTokens, case .registrations(let predicate) = tokens.counted { tokenPredicate = predicate }
        let appTotalCount = table.appTotals.count

        var deliveryIndex: [DeliveryKey: Int] = [:]
        var deliveries: [Delivery] = []
        // The messages of each delivery's set (at `index * setCount + set`), integers and UUIDs
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
                    deliveries.append(Delivery(key: key, totals: Array(repeating: 0, count: totalCount)))
                    integerKeys.append(contentsOf: Array(repeating: [], count: setCount))
                    uuidKeys.append(contentsOf: Array(repeating: [], count: setCount))
                }
                let action = Self.actionIndex(hit.action)
                let time = hit.time.nanosecondsSinceEpoch
                for total in actionTotals[action] { deliveries[index].totals[total] += 1 }
                for (total, predicate) in predicateTotals where predicate.matches(hit) { deliveries[index].totals[total] += 1 }
                deliveries[index].first = min(deliveries[index].first, time)
                deliveries[index].last = max(deliveries[index].last, time)
                func sight(_ set: Int) {
                    switch hit.messageId.identity {
                    case .integer(let value): integerKeys[index * setCount + set].append(value)
                    case .uuid(let text): uuidKeys[index * setCount + set].append(text)
                    }
                }
                for set in actionSets[action] { sight(set) }
                for (set, predicate) in predicateSets where predicate.matches(hit) { sight(set) }
            case .erased:
                break
            case .registration(let registration):
                let app = App(
                    tenant: registration.tenant.storedName, integrationKey: registration.integrationKey, platform: registration.platform.rawValue)
                let index = appIndex[app] ?? registrations.count
                if index == registrations.count {
                    appIndex[app] = index
                    registrations.append(Registrations(app: app, totals: Array(repeating: 0, count: appTotalCount)))
                }
                let time = registration.time.nanosecondsSinceEpoch
                registrations[index].registrations += 1
                registrations[index].first = min(registrations[index].first, time)
                registrations[index].last = max(registrations[index].last, time)
                let facts = RegistrationFacts(
                    tenant: app.tenant, integrationKey: app.integrationKey, platform: app.platform, timeNanoseconds: time,
                    originRelayID: registration.chain?.first.relayID)
                for (total, predicate) in appPredicates where predicate.isEvery || predicate.matches(facts) {
                    registrations[index].totals[total] += 1
                }
                if let tokenPredicate, tokenPredicate.isEvery || tokenPredicate.matches(facts) {
                    // Compared, never read back: the aggregates keep no token in the clear.
                    tokens.append(TokenSighting(app: index, token: tokenDigest(registration.registrationToken)))
                }
            }
        }
        // Indexes were handed out in order of first sighting; renumber them in key order.
        let deliveryOrder = deliveries.indices.sorted { deliveries[$0].key < deliveries[$1].key }
        self.deliveries = deliveryOrder.map { deliveries[$0] }
        var messages: [MessageSighting] = []
        messages.reserveCapacity(integerKeys.reduce(0) { $0 + $1.count } + uuidKeys.reduce(0) { $0 + $1.count })
        for (rank, index) in deliveryOrder.enumerated() {
            for set in 0..<setCount {
                // MessageKey's order: integers by value, then UUIDs by text.
                var integers = integerKeys[index * setCount + set]
                integers.sort()
                for value in Self.distinct(integers) {
                    messages.append(MessageSighting(delivery: rank, action: set, key: .integer(value)))
                }
                var uuids = uuidKeys[index * setCount + set]
                uuids.sort()
                for text in Self.distinct(uuids) {
                    messages.append(MessageSighting(delivery: rank, action: set, key: .uuid(text)))
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

    /// The uniques each delivery gains (by index in ``deliveries``; one per set of
    /// ``MetricTable/deliverySets``), given the delivery index and set of each sighting that the
    /// backend's table of distinct messages did not hold yet.
    package func uniques(new sightings: some Sequence<(delivery: Int, action: Int)>) -> [[Int64]] {
        var uniques = [[Int64]](repeating: Array(repeating: 0, count: table.deliverySets.count), count: deliveries.count)
        for sighting in sightings { uniques[sighting.delivery][sighting.action] += 1 }
        return uniques
    }

    /// The values of the delivery at `index`, one per ``MetricTable/perDelivery`` metric in that
    /// order (its totals, and `uniques` for its sets: ``uniques(new:)``).
    package func deliveryValues(_ index: Int, uniques: [Int64]) -> [Int64] {
        var totals = 0
        var sets = 0
        return table.perDelivery.map { metric in
            switch metric.kind {
            case .total:
                totals += 1
                return deliveries[index].totals[totals - 1]
            case .unique:
                sets += 1
                return uniques[sets - 1]
            }
        }
    }

    /// The values of the app at `index`, one per ``MetricTable/perApp`` metric in that order (its
    /// totals, and `distinctTokens` for the unique one: ``distinctTokens(newTokenApps:)``).
    package func appValues(_ index: Int, distinctTokens: Int64) -> [Int64] {
        var totals = 0
        return table.perApp.map { metric in
            switch metric.kind {
            case .total:
                totals += 1
                return registrations[index].totals[totals - 1]
            case .unique:
                return distinctTokens
            }
        }
    }

    /// The distinct tokens each app gains (by index in ``registrations``), given the app index of
    /// each token that the backend's table of tokens did not hold yet.
    package func distinctTokens(newTokenApps apps: some Sequence<Int>) -> [Int64] {
        var distinct = [Int64](repeating: 0, count: registrations.count)
        for app in apps { distinct[app] += 1 }
        return distinct
    }

    /// The key both schemas store a delivery's set under in their tables of distinct messages
    /// (``MessageSetKey``; for sets 0 to 3, `delivery_ref * 4 + set`: docs/aggregates.md,
    /// docs/aggregates-postgres.md).
    package static func deliveryAction(reference: Int64, action: Int) -> Int64 { MessageSetKey.key(reference: reference, set: action) }

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
