import RelayCore

/// Events for log tests, each identifiable by a unique number carried in its message id.
enum TestEvents {
    static func tracking(_ id: Int64, delivery: String = "f0190", action: TrackingAction = .impression) -> Event {
        .tracking(
            TrackingEvent(
                action: action, messageId: MessageID(decimal: id), deliveryId: delivery, integrationKey: nil,
                time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000 + id * 1_000_000, fractionDigits: 3)
            )
        )
    }

    /// The unique number of an event made by ``tracking(_:delivery:action:)``.
    static func id(of event: Event) -> Int64? {
        guard case .tracking(let hit) = event, case .decimal(let value) = hit.messageId.form else { return nil }
        return value
    }
}
