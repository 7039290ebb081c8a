import RelayCore

/// A batch of log events reduced to what one PostgreSQL transaction writes: sorted, distinct keys
/// for the unique tables (every relay inserts in the same order, so two relays' transactions never
/// wait for each other in a cycle) and per-delivery and per-app deltas.
struct FleetBatch {
    /// `delivery_ref * 4 + action` and a decimal message's 64-bit identity, sorted, distinct.
    var integerMessages: [(deliveryAction: Int64, key: Int64)] = []
    /// `delivery_ref * 4 + action` and a UUID message (lower case), sorted, distinct.
    var uuidMessages: [(deliveryAction: Int64, uuid: String)] = []
    /// Per delivery ref: totals (impressions, opens, clicks) and event times.
    var deliveries: [Int64: DeliveryDelta] = [:]
    /// Registration tokens (key, platform, token), sorted, distinct.
    var tokens: [(integrationKey: String, platform: String, token: String)] = []
    /// Per app and platform: registrations and event times.
    var registrations: [AppKey: RegistrationDelta] = [:]
    /// Events counted (re-queued dead-letter copies are not).
    var events = 0

    struct DeliveryDelta {
        var totals: [Int64] = [0, 0, 0]
        var first = Int64.max
        var last = Int64.min
    }

    struct AppKey: Hashable {
        var integrationKey: String
        var platform: String
    }

    struct RegistrationDelta {
        var registrations: Int64 = 0
        var first = Int64.max
        var last = Int64.min
    }

    /// The delivery ids of `events` (what must have a `delivery_ref` before ``init(_:deliveryRefs:)``).
    static func deliveryIds(of events: ArraySlice<SequencedEvent>) -> Set<String> {
        var ids = Set<String>()
        for sequenced in events where sequenced.event.origin == nil {
            if case .tracking(let hit) = sequenced.event { ids.insert(hit.deliveryId) }
        }
        return ids
    }

    /// Reduces `events`; `deliveryRefs` holds a ref for every delivery id among them.
    init(_ events: ArraySlice<SequencedEvent>, deliveryRefs: [String: Int64]) {
        var integers: [(Int64, Int64)] = []
        var uuids: [(Int64, String)] = []
        var tokens: [(String, String, String)] = []
        // A copy of an earlier entry (a re-queued dead letter) was counted as that entry.
        for sequenced in events where sequenced.event.origin == nil {
            self.events += 1
            switch sequenced.event {
            case .tracking(let hit):
                guard let reference = deliveryRefs[hit.deliveryId] else { continue }
                let action = Self.actionIndex(hit.action)
                let time = hit.time.nanosecondsSinceEpoch
                let deliveryAction = reference &* 4 &+ Int64(action)
                switch hit.messageId.identity {
                case .integer(let value): integers.append((deliveryAction, value))
                case .uuid(let text): uuids.append((deliveryAction, text))
                }
                deliveries[reference, default: DeliveryDelta()].record(action: action, time: time)
            case .registration(let registration):
                let key = AppKey(integrationKey: registration.integrationKey, platform: registration.platform.rawValue)
                tokens.append((key.integrationKey, key.platform, registration.registrationToken))
                let time = registration.time.nanosecondsSinceEpoch
                registrations[key, default: RegistrationDelta()].record(time: time)
            }
        }
        integers.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
        uuids.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
        tokens.sort { ($0.0, $0.1, $0.2) < ($1.0, $1.1, $1.2) }
        integerMessages = Self.distinct(integers).map { (deliveryAction: $0.0, key: $0.1) }
        uuidMessages = Self.distinct(uuids).map { (deliveryAction: $0.0, uuid: $0.1) }
        self.tokens = Self.distinct(tokens).map { (integrationKey: $0.0, platform: $0.1, token: $0.2) }
    }

    private static func distinct<A: Equatable, B: Equatable>(_ sorted: [(A, B)]) -> [(A, B)] {
        var result: [(A, B)] = []
        result.reserveCapacity(sorted.count)
        for pair in sorted where result.last.map({ $0 != pair }) ?? true { result.append(pair) }
        return result
    }

    private static func distinct<A: Equatable, B: Equatable, C: Equatable>(_ sorted: [(A, B, C)]) -> [(A, B, C)] {
        var result: [(A, B, C)] = []
        result.reserveCapacity(sorted.count)
        for triple in sorted where result.last.map({ $0 != triple }) ?? true { result.append(triple) }
        return result
    }

    /// 0 impressions, 1 opens, 2 clicks, as in the SQLite aggregates.
    static func actionIndex(_ action: TrackingAction) -> Int {
        switch action {
        case .impression: 0
        case .open: 1
        case .click: 2
        }
    }
}

extension FleetBatch.DeliveryDelta {
    mutating func record(action: Int, time: Int64) {
        totals[action] += 1
        first = min(first, time)
        last = max(last, time)
    }
}

extension FleetBatch.RegistrationDelta {
    mutating func record(time: Int64) {
        registrations += 1
        first = min(first, time)
        last = max(last, time)
    }
}
