public import RelayCore

/// The `id` query value of a tracking hit, `h{messageId},{deliveryId},{tag}`, split into its parts
/// as they are on the wire.
///
/// It knows the syntax only; ``SDKTrackingHit`` turns a parsed id into a ``TrackingEvent`` with the
/// message-id rules, and ``CampaignRequest/tracking(_:host:)`` writes one from an event.
public struct TrackingHitID: Sendable, Hashable, CustomStringConvertible {
    /// The message id as sent after `h`: hex digits or a UUID, unchanged.
    public var messageID: String
    /// The delivery id, verbatim.
    public var deliveryID: String
    /// What the hit reports.
    public var tag: Tag

    /// The tags Campaign knows.
    public enum Tag: Int, Sendable, Hashable {
        /// `1`: the notification was received (displayed).
        case received = 1
        /// `2`: the notification was opened, or one of its actions clicked.
        case opened = 2
    }

    /// The syntax, for messages: `h{messageId},{deliveryId},{tag}`.
    public static let syntax = "h{messageId},{deliveryId},{tag}"

    /// An id from its parts; the parts are expected to be valid (``validatedDeliveryID(_:field:)``).
    public init(messageID: String, deliveryID: String, tag: Tag) {
        self.messageID = messageID
        self.deliveryID = deliveryID
        self.tag = tag
    }

    /// Splits `text` into its three parts.
    ///
    /// - Throws: ``EventInputError`` when the text does not start with `h`, has no three non-empty
    ///   comma-separated parts, or a tag other than 1 or 2. The message and delivery ids are not
    ///   checked further here.
    public init(parsing text: String) throws(EventInputError) {
        guard text.hasPrefix("h") else {
            throw EventInputError(field: "id", "id \(text.quotedForMessage) must start with h: h{messageId},{deliveryId},{tag}")
        }
        let parts = text.dropFirst().split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw EventInputError(field: "id", "id \(text.quotedForMessage) must be h{messageId},{deliveryId},{tag}") }
        guard parts[2] == "1" || parts[2] == "2" else {
            throw EventInputError(field: "tag", "tag \(String(parts[2]).quotedForMessage) is not 1 (received) or 2 (opened)")
        }
        guard !parts[0].isEmpty else { throw EventInputError(field: "messageId", "id \(text.quotedForMessage) has an empty message id") }
        guard !parts[1].isEmpty else { throw EventInputError(field: "deliveryId", "id \(text.quotedForMessage) has an empty delivery id") }
        self.init(messageID: String(parts[0]), deliveryID: String(parts[1]), tag: parts[2] == "1" ? .received : .opened)
    }

    /// `h{messageId},{deliveryId},{tag}`.
    public var description: String { "h\(messageID),\(deliveryID),\(tag.rawValue)" }

    /// `value` when it can go verbatim into the id: 1 to 255 URL-unreserved characters (letters,
    /// digits, `-`, `.`, `_`, `~`), which keep the comma-separated id unambiguous.
    ///
    /// - Throws: ``EventInputError`` naming `field` and the first character that is not allowed.
    public static func validatedDeliveryID(_ value: String, field: String) throws(EventInputError) -> String {
        guard !value.isEmpty else { throw EventInputError(field: field, "\(field) is empty") }
        guard value.utf8.count <= 255 else { throw EventInputError(field: field, "\(field) is longer than 255 bytes") }
        for scalar in value.unicodeScalars {
            let allowed =
                (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || (scalar >= "0" && scalar <= "9")
                || scalar == "-" || scalar == "." || scalar == "_" || scalar == "~"
            guard allowed else {
                throw EventInputError(
                    field: field,
                    "\(field) \(value.quotedForMessage) contains \(JSONText.quoted(String(scalar))) (allowed: letters, digits, '-', '.', '_', '~')"
                )
            }
        }
        return value
    }
}
