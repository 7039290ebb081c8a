/// A tracking hit as an SDK sends it: the `id` of `GET /r/?id=h{messageId},{deliveryId},{tag}`.
///
/// The message id arrives in wire form (hex digits or a UUID) and is kept exactly as received, so
/// that it goes upstream unchanged (``MessageID/Form/hex(_:)``); it still counts under its
/// canonical identity. Tag 1 is an impression, tag 2 an open (the SDKs' `notifyOpening` /
/// `trackNotificationClick`; Campaign reports both as opens).
public enum SDKTrackingHit {
    /// The hit `id` describes.
    ///
    /// - Throws: ``EventInputError`` naming the part that is wrong: no `h`, not three parts, a tag
    ///   other than 1 or 2, a message id that is neither a UUID nor 1 to 16 hex digits, or a
    ///   delivery id Campaign could not take.
    public static func event(id: String, time: EventTime) throws(EventInputError) -> TrackingEvent {
        guard id.hasPrefix("h") else {
            throw EventInputError(field: "id", "id \(id.quotedForMessage) must start with h: h{messageId},{deliveryId},{tag}")
        }
        let parts = id.dropFirst().split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw EventInputError(field: "id", "id \(id.quotedForMessage) must be h{messageId},{deliveryId},{tag}") }
        let action: TrackingAction
        switch parts[2] {
        case "1": action = .impression
        case "2": action = .open
        default: throw EventInputError(field: "tag", "tag \(String(parts[2]).quotedForMessage) is not 1 (received) or 2 (opened)")
        }
        let wire = String(parts[0])
        // The id as received, `h` included: the hex form's text.
        let received = String(id.prefix(1 + parts[0].count))
        let messageId: MessageID
        if let form = MessageID.parseUUID(wire) {
            messageId = MessageID(uncheckedText: wire, form: form)
        } else if let value = MessageID.parseWireHex(received) {
            messageId = MessageID(uncheckedText: received, form: .hex(value))
        } else {
            throw EventInputError(field: "messageId", "message id \(wire.quotedForMessage) is neither a UUID nor 1 to 16 hex digits")
        }
        let deliveryId = try EventDecoder.validatedDeliveryId(String(parts[1]), field: "deliveryId")
        return TrackingEvent(action: action, messageId: messageId, deliveryId: deliveryId, time: time)
    }
}
