public import RelayCore

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
        let parsed = try TrackingHitID(parsing: id)
        let messageId = try MessageID(wire: parsed.messageID)
        let deliveryId = try TrackingHitID.validatedDeliveryID(parsed.deliveryID, field: "deliveryId")
        return TrackingEvent(action: TrackingAction(wireTag: parsed.tag), messageId: messageId, deliveryId: deliveryId, time: time)
    }
}
