import CampaignProtocol
package import RelayCore

/// The common body of `POST /v1/events`, decoded straight from its bytes: a JSON array of
/// tracking events whose members are all plain ASCII strings (no escapes).
///
/// The general path parses a ``JSONValue`` tree first (an array of members per event, a string
/// per name and value), then matches names as strings: it was a quarter of `serve`'s CPU under
/// batch ingest. This scanner reads the same bytes once, matches member names as bytes and makes
/// strings of the values alone.
///
/// It only ever takes a body the general path takes, and gives the same events: at the first
/// thing it does not handle (an escape, a byte outside ASCII, a number or an object, another kind,
/// an unknown, repeated or missing member, a value a rule refuses, an event `admission` does not
/// take, more than `maximumEvents` events, an empty array) it answers `nil`, and the general path
/// decodes the whole body, so every refusal and its words come from one place. The fuzz target
/// `json-events` and `TrackingBatchScannerTests` hold it to that.
package enum TrackingBatchScanner {
    /// The events of `body`, or `nil` when the general path must decide (see the type's summary).
    package static func events(
        in body: UnsafeBufferPointer<UInt8>, defaultTime: EventTime, maximumEvents: Int, admission: EventAdmission
    ) -> [Event]? {
        var cursor = Cursor(body)
        cursor.skipWhitespace()
        guard cursor.take(UInt8(ascii: "[")) else { return nil }
        var events: [Event] = []
        events.reserveCapacity(min(maximumEvents, 128))
        while true {
            cursor.skipWhitespace()
            guard events.count < maximumEvents, let hit = cursor.trackingEvent(defaultTime: defaultTime) else { return nil }
            let event = Event.tracking(hit)
            guard admission.takesEveryEvent || admission.problems(of: event).isEmpty else { return nil }
            events.append(event)
            cursor.skipWhitespace()
            if cursor.take(UInt8(ascii: ",")) { continue }
            guard cursor.take(UInt8(ascii: "]")) else { return nil }
            cursor.skipWhitespace()
            return cursor.atEnd ? events : nil
        }
    }

    /// A position in the body; every method answers `nil` or `false` for what the scanner leaves
    /// to the general path.
    private struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(_ bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        var atEnd: Bool { index == bytes.count }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        /// The bytes between a pair of double quotes, when they hold printable ASCII and no escape.
        mutating func plainString() -> UnsafeBufferPointer<UInt8>? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return UnsafeBufferPointer(rebasing: bytes[start..<(index - 1)])
                }
                guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
                index += 1
            }
            return nil
        }

        /// One `{…}` tracking event; `nil` for anything else.
        mutating func trackingEvent(defaultTime: EventTime) -> TrackingEvent? {
            guard take(UInt8(ascii: "{")) else { return nil }
            var seen = Member.Members()
            var action: TrackingAction?
            var messageId: MessageID?
            var deliveryId: String?
            var integrationKey: String?
            var time: EventTime?
            while true {
                skipWhitespace()
                guard let name = plainString(), let member = Member(name), !seen.contains(member.set) else { return nil }
                seen.formUnion(member.set)
                skipWhitespace()
                guard take(UInt8(ascii: ":")) else { return nil }
                skipWhitespace()
                guard let value = plainString() else { return nil }
                switch member {
                case .kind:
                    guard Self.equals(value, "track") else { return nil }
                case .action:
                    // An action added to the model and not here is left to the general path.
                    if Self.equals(value, "impression") {
                        action = .impression
                    } else if Self.equals(value, "open") {
                        action = .open
                    } else if Self.equals(value, "click") {
                        action = .click
                    } else {
                        return nil
                    }
                case .messageId:
                    guard let valid = MessageID(value) else { return nil }
                    messageId = valid
                case .deliveryId:
                    deliveryId = try? TrackingHitID.validatedDeliveryID(String(decoding: value, as: UTF8.self), field: "deliveryId")
                    if deliveryId == nil { return nil }
                case .integrationKey:
                    // The general path's rule for tracking keys: not empty, no space or control
                    // character (the scanner has already left anything outside ASCII to it).
                    guard !value.isEmpty, value.count <= EventDecoder.maximumFieldBytes, !value.contains(where: { $0 <= 0x20 || $0 == 0x7F })
                    else { return nil }
                    integrationKey = String(decoding: value, as: UTF8.self)
                case .time:
                    guard !value.isEmpty, value.count <= EventDecoder.maximumFieldBytes else { return nil }
                    time = try? EventTime(rfc3339: String(decoding: value, as: UTF8.self))
                    if time == nil { return nil }
                }
                skipWhitespace()
                if take(UInt8(ascii: ",")) { continue }
                guard take(UInt8(ascii: "}")), let action, let messageId, let deliveryId, seen.contains(.kind) else { return nil }
                return TrackingEvent(
                    action: action, messageId: messageId, deliveryId: deliveryId, integrationKey: integrationKey, time: time ?? defaultTime)
            }
        }

        static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
            bytes.count == text.utf8CodeUnitCount && bytes.elementsEqual(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        }
    }

    /// The members of a tracking event the scanner reads; an alias (`_mId`, `_dId`) is the same
    /// member as its canonical name, so giving both is a repeat (which the general path refuses).
    private enum Member: UInt8 {
        case kind, action, messageId, deliveryId, integrationKey, time

        struct Members: OptionSet {
            let rawValue: UInt8
            static let kind = Members(rawValue: 1 << 0)
        }

        var set: Members { Members(rawValue: 1 << rawValue) }

        init?(_ name: UnsafeBufferPointer<UInt8>) {
            switch name.count {
            case 4:
                if Cursor.equals(name, "kind") {
                    self = .kind
                } else if Cursor.equals(name, "_mId") {
                    self = .messageId
                } else if Cursor.equals(name, "_dId") {
                    self = .deliveryId
                } else if Cursor.equals(name, "time") {
                    self = .time
                } else {
                    return nil
                }
            case 6 where Cursor.equals(name, "action"): self = .action
            case 9 where Cursor.equals(name, "messageId"): self = .messageId
            case 10 where Cursor.equals(name, "deliveryId"): self = .deliveryId
            case 14 where Cursor.equals(name, "integrationKey"): self = .integrationKey
            default: return nil
            }
        }
    }
}
