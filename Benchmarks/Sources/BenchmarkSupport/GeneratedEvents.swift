import RelayCore
import RelayEventJSON

/// Realistic tracking events for benchmarks: 200 deliveries, random decimal message ids,
/// 60 % impressions, 30 % opens, 10 % clicks, one millisecond apart.
public enum GeneratedEvents {
    /// `count` tracking events, the same for the same `seed`.
    public static func tracking(count: Int, seed: UInt64 = 7) -> [Event] {
        var state = seed
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let deliveries = (0..<200).map { "f" + String(0x1000 + $0, radix: 16) }
        let base: Int64 = 1_795_255_200_000_000_000
        return (0..<count).map { index in
            let roll = next() % 10
            let action: TrackingAction = roll < 6 ? .impression : roll < 9 ? .open : .click
            return .tracking(
                TrackingEvent(
                    action: action, messageId: MessageID(decimal: Int64(next() % 1_000_000_000) + 1),
                    deliveryId: deliveries[Int(next() % 200)], integrationKey: nil,
                    time: EventTime(nanosecondsSinceEpoch: base + Int64(index) * 1_000_000, fractionDigits: 3)
                )
            )
        }
    }

    /// The same events as JSONL text, one line each (the `ingest` input format).
    public static func jsonl(_ events: [Event]) -> String {
        var text = ""
        text.reserveCapacity(events.count * 120)
        for event in events {
            text += EventEncoder.json(event)
            text += "\n"
        }
        return text
    }
}
