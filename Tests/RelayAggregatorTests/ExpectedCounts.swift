import RelayAggregates
import RelayAggregator
import RelayCore

/// Counts computed independently of the aggregator, straight from the events, for comparison.
struct ExpectedCounts: Equatable {
    struct Delivery: Equatable {
        var totals = [0, 0, 0]
        var uniques = [0, 0, 0]
        var first = Int64.max
        var last = Int64.min
    }

    struct Registrations: Equatable {
        var count = 0
        var tokens = Set<String>()
    }

    var deliveries: [String: Delivery] = [:]
    var registrations: [String: Registrations] = [:]
    private var seen = Set<String>()

    /// Adds events in log order.
    mutating func add(_ events: [Event]) {
        // A copy of an earlier entry (a re-queued dead letter) counts as that entry, not again.
        for event in events where event.origin == nil {
            switch event {
            case .tracking(let hit):
                let action = [TrackingAction.impression: 0, .open: 1, .click: 2][hit.action] ?? 0
                var delivery = deliveries[hit.deliveryId, default: Delivery()]
                delivery.totals[action] += 1
                if seen.insert("\(hit.deliveryId)|\(action)|\(Self.identity(hit.messageId.text))").inserted { delivery.uniques[action] += 1 }
                delivery.first = min(delivery.first, hit.time.nanosecondsSinceEpoch)
                delivery.last = max(delivery.last, hit.time.nanosecondsSinceEpoch)
                deliveries[hit.deliveryId] = delivery
            case .erased:
                continue
            case .registration(let registration):
                let key = "\(registration.integrationKey)|\(registration.platform.rawValue)"
                registrations[key, default: Registrations()].count += 1
                registrations[key, default: Registrations()].tokens.insert(registration.registrationToken)
            }
        }
    }

    /// Campaign's identity of a message, computed here from the text alone, independently of
    /// `MessageID` (the rule of docs/sdk-edge.md): a UUID case-insensitively; a decimal or an
    /// `h` + hex wire form by the number Campaign receives, negative 32-bit values (and their
    /// 64-bit sign extension) by their low 32 bits.
    static func identity(_ text: String) -> String {
        if text.count == 36, text.filter({ $0 == "-" }).count == 4 { return "uuid:" + text.lowercased() }
        let value: Int64
        if text.hasPrefix("h"), let bits = UInt64(text.dropFirst(), radix: 16) {
            value = bits >= 0xFFFF_FFFF_8000_0000 ? Int64(bits & 0xFFFF_FFFF) : Int64(bitPattern: bits)
        } else if let decimal = Int64(text) {
            value = decimal < 0 && decimal >= -(1 << 31) ? decimal + (1 << 32) : decimal
        } else {
            return "unparsed:" + text
        }
        return "int:\(value)"
    }

    /// Whether the aggregates read back hold exactly these counts; the first difference otherwise.
    func difference(from deliveries: [DeliveryCounts], _ registrations: [RegistrationCounts]) -> String? {
        guard deliveries.count == self.deliveries.count else { return "\(deliveries.count) deliveries, expected \(self.deliveries.count)" }
        for row in deliveries {
            guard let expected = self.deliveries[row.deliveryId] else { return "unexpected delivery \(row.deliveryId)" }
            let actual = Delivery(
                totals: [Int(row.impressions), Int(row.opens), Int(row.clicks)],
                uniques: [Int(row.uniqueImpressions), Int(row.uniqueOpens), Int(row.uniqueClicks)],
                first: row.firstEvent.nanosecondsSinceEpoch, last: row.lastEvent.nanosecondsSinceEpoch
            )
            if actual != expected { return "delivery \(row.deliveryId): \(actual), expected \(expected)" }
        }
        guard registrations.count == self.registrations.count else {
            return "\(registrations.count) registration rows, expected \(self.registrations.count)"
        }
        for row in registrations {
            let key = "\(row.integrationKey)|\(row.platform.rawValue)"
            guard let expected = self.registrations[key] else { return "unexpected registrations \(key)" }
            if row.registrations != expected.count || row.distinctTokens != expected.tokens.count {
                return "registrations \(key): \(row.registrations)/\(row.distinctTokens), expected \(expected.count)/\(expected.tokens.count)"
            }
        }
        return nil
    }
}

/// A seeded mix of hits and registrations with deliberate duplicates and every message-id form.
enum MixedEvents {
    static func make(count: Int, seed: UInt64) throws -> [Event] {
        var state = seed
        func next(_ bound: UInt64) -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return (z ^ (z >> 31)) % bound
        }
        let uuidPrefix = "6b6499a8-9d43-4bc5-acf0-b6aeb9684"
        var events: [Event] = []
        for _ in 0..<count {
            let time = EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000 + Int64(next(10_000_000)) * 1_000_000, fractionDigits: 3)
            if next(20) == 0 {
                let platform: Platform = next(2) == 0 ? .ios : .android
                events.append(
                    .registration(
                        Registration(platform: platform, integrationKey: "app\(next(3))", registrationToken: "token\(next(40))", time: time)))
                continue
            }
            // Small id space, so the same message is hit several times (duplicates).
            let raw = Int64(next(400))
            let text: String
            switch next(9) {
            case 0: text = String(raw)
            case 1: text = "00" + String(raw)  // the same message as String(raw)
            case 2: text = String(-raw - 1)  // negative 32-bit
            case 3: text = uuidPrefix + String(format3: raw)
            case 4: text = (uuidPrefix + String(format3: raw)).uppercased()  // the same message as case 3
            case 5: text = "h0" + String(raw, radix: 16).uppercased()  // an SDK hit's wire form: the same message as String(raw)
            case 6: text = "h" + String(UInt64(bitPattern: -raw - 1), radix: 16)  // sign-extended: the same as case 2
            case 7: text = "h" + String(UInt32(truncatingIfNeeded: -raw - 1), radix: 16)  // 32-bit: the same as case 2
            default: text = String(raw + 1_000_000)
            }
            let action = [TrackingAction.impression, .impression, .open, .click][Int(next(4))]
            let id = try MessageID(text)
            var hit = TrackingEvent(action: action, messageId: id, deliveryId: "d\(next(7))", time: time)
            // Now and then a re-queued copy of an earlier entry, which must not count again.
            if next(25) == 0 { hit.origin = EventOrigin(sequence: UInt64(next(50)) + 1) }
            events.append(.tracking(hit))
        }
        return events
    }
}

extension String {
    /// Three hex digits of `value` (keeps a UUID valid when substituted into it).
    init(format3 value: Int64) {
        let hex = String(value % 4096, radix: 16)
        self = String(repeating: "0", count: 3 - hex.count) + hex
    }
}
