import RelayCore

/// An open of message `id` (as a decimal message id) of `delivery`, at one fixed time: the event
/// the aggregator tests count by the thousand.
func openHit(_ id: Int, delivery: String) -> Event {
    .tracking(
        TrackingEvent(
            action: .open, messageId: MessageID(decimal: Int64(id)), deliveryId: delivery,
            time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000)))
}
