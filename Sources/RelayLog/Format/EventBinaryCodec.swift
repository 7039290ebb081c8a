import CampaignSDKForm
public import RelayCore

/// The compact binary encoding of events inside a frame payload (before compression).
///
/// Specified byte for byte in `docs/wal-format.md`. Times are stored as deltas from the previous
/// event of the same frame, so a frame decodes on its own and never depends on another frame.
public enum EventBinaryCodec {
    /// A payload that does not decode: the offset inside the uncompressed payload and the reason.
    public struct DecodingError: Error, Sendable, CustomStringConvertible {
        /// Byte offset inside the uncompressed payload.
        public var offset: Int
        /// What was wrong there.
        public var reason: String
        public var description: String { "payload byte \(offset): \(reason)" }
    }

    static let trackingTag: UInt8 = 1
    static let registrationTag: UInt8 = 2
    static let sdkRegistrationTag: UInt8 = 3
    static let originTag: UInt8 = 4
    static let requestTag: UInt8 = 5
    static let chainTag: UInt8 = 6
    static let tenantTag: UInt8 = 7
    static let erasedTag: UInt8 = 8

    /// Encodes `events` in order.
    public static func encode<C: Collection<Event>>(_ events: C) -> [UInt8] {
        var writer = BinaryWriter(capacity: events.count * 32)
        var previousTime: Int64 = 0
        for event in events {
            encode(event, into: &writer, previousTime: &previousTime)
        }
        return writer.bytes
    }

    /// Decodes exactly `count` events from `payload`.
    public static func decode(_ payload: UnsafeBufferPointer<UInt8>, count: Int) throws(DecodingError) -> [Event] {
        // Every event takes at least one byte, so a larger count is damage; checking it first also
        // keeps a forged count from reserving memory for events that cannot be there.
        guard count <= payload.count else {
            throw DecodingError(offset: 0, reason: "\(count) events cannot fit in \(payload.count) payload bytes")
        }
        var reader = BinaryReader(payload)
        var events: [Event] = []
        events.reserveCapacity(count)
        var previousTime: Int64 = 0
        do throws(BinaryReader.Failure) {
            for _ in 0..<count {
                events.append(try decodeEvent(&reader, previousTime: &previousTime))
            }
            guard reader.isAtEnd else { throw reader.failure("\(payload.count - reader.offset) bytes left after \(count) events") }
        } catch {
            throw DecodingError(offset: error.offset, reason: error.reason)
        }
        return events
    }

    /// Decodes exactly `count` events from an array.
    public static func decode(_ payload: [UInt8], count: Int) throws(DecodingError) -> [Event] {
        let result: Result<[Event], DecodingError> = payload.withUnsafeBufferPointer { buffer in
            do throws(DecodingError) { return .success(try decode(buffer, count: count)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// Appends one event's encoding; `previousTime` carries the time delta from event to event
    /// (start it at 0 for each frame).
    static func encode(_ event: Event, into writer: inout BinaryWriter, previousTime: inout Int64) {
        if let tenant = event.tenant {
            // The outermost wrapper: the tenant the event belongs to, then the event as the default
            // tenant's. Outermost, so a reader that routes by tenant finds it in the first bytes.
            writer.u8(tenantTag)
            writer.string(tenant.text)
            var untenanted = event
            untenanted.tenant = nil
            encode(untenanted, into: &writer, previousTime: &previousTime)
            return
        }
        if let request = event.request {
            // Stored for a keyed request: the key and the event's index in it, then the event.
            writer.u8(requestTag)
            writer.string(request.key)
            writer.varint(UInt64(request.index))
            var stored = event
            stored.request = nil
            encode(stored, into: &writer, previousTime: &previousTime)
            return
        }
        if let chain = event.chain {
            // Handed on by another relay: where it was first logged, and who handed it on.
            writer.u8(chainTag)
            encode(chain.first, into: &writer)
            if let hop = chain.hop {
                writer.u8(1)
                encode(hop, into: &writer)
            } else {
                writer.u8(0)
            }
            var local = event
            local.chain = nil
            encode(local, into: &writer, previousTime: &previousTime)
            return
        }
        if let origin = event.origin {
            // A copy: its origin, then the event itself as an original.
            writer.u8(originTag)
            writer.varint(origin.sequence)
            var original = event
            original.origin = nil
            encode(original, into: &writer, previousTime: &previousTime)
            return
        }
        switch event {
        case .erased(let entry):
            // Nothing of the registration: only its time, for the frame's time deltas.
            writer.u8(erasedTag)
            encode(entry.time, into: &writer, previousTime: &previousTime)
        case .tracking(let hit):
            writer.u8(trackingTag)
            writer.u8(actionCode(hit.action))
            encode(hit.messageId, into: &writer)
            writer.string(hit.deliveryId)
            writer.optionalString(hit.integrationKey)
            encode(hit.time, into: &writer, previousTime: &previousTime)
        case .registration(let registration) where registration.sdkForm != nil:
            // The body is the registration; its fields are read from it again when decoded.
            writer.u8(sdkRegistrationTag)
            writer.u8(registration.platform == .ios ? 1 : 2)
            writer.string(registration.sdkForm ?? "")
            encode(registration.time, into: &writer, previousTime: &previousTime)
        case .registration(let registration):
            writer.u8(registrationTag)
            writer.u8(registration.platform == .ios ? 1 : 2)
            writer.string(registration.integrationKey)
            writer.string(registration.registrationToken)
            for field in Registration.optionalTextFields {
                writer.optionalString(registration[keyPath: field.keyPath])
            }
            if let params = registration.additionalParams {
                writer.varint(UInt64(params.count) + 1)
                for param in params {
                    writer.string(param.name)
                    switch param.value {
                    case .string(let text):
                        writer.u8(1)
                        writer.string(text)
                    case .number(let literal):
                        writer.u8(2)
                        writer.string(literal)
                    case .bool(let flag):
                        writer.u8(flag ? 4 : 3)
                    }
                }
            } else {
                writer.varint(0)
            }
            encode(registration.time, into: &writer, previousTime: &previousTime)
        }
    }

    /// A relay position: the relay id's 16 bytes, the epoch and the sequence number.
    private static func encode(_ position: RelayPosition, into writer: inout BinaryWriter) {
        writer.u64(position.relayIDHigh.bigEndian)
        writer.u64(position.relayIDLow.bigEndian)
        writer.varint(UInt64(position.epoch))
        writer.varint(position.sequence)
    }

    private static func decodePosition(_ reader: inout BinaryReader) throws(BinaryReader.Failure) -> RelayPosition {
        let bytes = (UInt64(bigEndian: try reader.u64()), UInt64(bigEndian: try reader.u64()))
        let epoch = try reader.varint()
        let sequence = try reader.varint()
        guard epoch >= 1, epoch <= UInt64(UInt32.max), sequence >= 1 else {
            throw reader.failure("a relay position with epoch \(epoch) and sequence \(sequence)")
        }
        return RelayPosition(relayIDBytes: bytes, epoch: UInt32(epoch), sequence: sequence)
    }

    private static func actionCode(_ action: TrackingAction) -> UInt8 {
        switch action {
        case .impression: 1
        case .open: 2
        case .click: 3
        }
    }

    private static func encode(_ id: MessageID, into writer: inout BinaryWriter) {
        switch id.form {
        case .decimal(let value) where id.text == String(value):
            writer.u8(0)
            writer.signedVarint(value)
        case .uuid(let bytes, let uppercase?) where id.text == MessageID.uuidText(bytes, uppercase: uppercase):
            writer.u8(uppercase ? 2 : 1)
            writer.u64(bytes.0.bigEndian)
            writer.u64(bytes.1.bigEndian)
        default:
            writer.u8(3)
            writer.string(id.text)
        }
    }

    private static func encode(_ time: EventTime, into writer: inout BinaryWriter, previousTime: inout Int64) {
        writer.signedVarint(time.nanosecondsSinceEpoch &- previousTime)
        previousTime = time.nanosecondsSinceEpoch
        if let minutes = time.utcOffsetMinutes {
            writer.u8(time.fractionDigits | 0x10)
            writer.signedVarint(Int64(minutes))
        } else {
            writer.u8(time.fractionDigits)
        }
    }

    /// The most wrappers (tenant, request identity, chain origin, origin) one event can have: each
    /// kind at most once, as the checks below require.
    static let maximumWrappers = 4

    /// Decodes one event; `wrappers` counts the wrappers already read around it. The count is
    /// checked before going one level deeper: a run of wrapper tags would otherwise recurse once
    /// per two bytes and overflow the stack long before the checks below could refuse it.
    private static func decodeEvent(
        _ reader: inout BinaryReader, previousTime: inout Int64, wrappers: Int = 0
    ) throws(BinaryReader.Failure) -> Event {
        let tag = try reader.u8()
        if tag == tenantTag || tag == requestTag || tag == chainTag || tag == originTag, wrappers == maximumWrappers {
            throw reader.failure("more than \(maximumWrappers) wrappers around one event")
        }
        switch tag {
        case tenantTag:
            let text = try reader.string()
            let tenant: TenantName
            do throws(EventInputError) {
                tenant = try TenantName(validating: text)
            } catch {
                throw reader.failure("stored tenant is invalid: \(error.message)")
            }
            var event = try decodeEvent(&reader, previousTime: &previousTime, wrappers: wrappers + 1)
            guard event.tenant == nil else { throw reader.failure("a tenant inside a tenant") }
            event.tenant = tenant
            return event
        case requestTag:
            let key = try reader.string()
            let index = try reader.varint()
            guard !key.isEmpty, index <= UInt64(Int32.max) else { throw reader.failure("a request identity with an empty key or index \(index)") }
            var event = try decodeEvent(&reader, previousTime: &previousTime, wrappers: wrappers + 1)
            guard event.request == nil, event.tenant == nil else { throw reader.failure("a request identity or tenant inside a request identity") }
            event.request = RequestIdentity(key: key, index: Int(index))
            return event
        case chainTag:
            let first = try decodePosition(&reader)
            let hop: RelayPosition?
            switch try reader.u8() {
            case 0: hop = nil
            case 1: hop = try decodePosition(&reader)
            case let other: throw reader.failure("unknown hop flag \(other)")
            }
            var event = try decodeEvent(&reader, previousTime: &previousTime, wrappers: wrappers + 1)
            guard event.chain == nil, event.request == nil, event.tenant == nil else {
                throw reader.failure("a chain origin, request identity or tenant inside a chain origin")
            }
            event.chain = ChainOrigin(first: first, hop: hop)
            return event
        case originTag:
            let origin = EventOrigin(sequence: try reader.varint())
            var event = try decodeEvent(&reader, previousTime: &previousTime, wrappers: wrappers + 1)
            guard event.origin == nil, event.request == nil, event.chain == nil, event.tenant == nil else {
                throw reader.failure("an origin, request identity, chain origin or tenant inside an origin")
            }
            event.origin = origin
            return event
        case trackingTag:
            let action: TrackingAction
            switch try reader.u8() {
            case 1: action = .impression
            case 2: action = .open
            case 3: action = .click
            case let other: throw reader.failure("unknown action code \(other)")
            }
            let messageId = try decodeMessageID(&reader)
            let deliveryId = try reader.string()
            let integrationKey = try reader.optionalString()
            let time = try decodeTime(&reader, previousTime: &previousTime)
            return .tracking(TrackingEvent(action: action, messageId: messageId, deliveryId: deliveryId, integrationKey: integrationKey, time: time))
        case erasedTag:
            return .erased(ErasedEntry(time: try decodeTime(&reader, previousTime: &previousTime)))
        case sdkRegistrationTag:
            let platform = try decodePlatform(&reader)
            let body = try reader.string()
            let time = try decodeTime(&reader, previousTime: &previousTime)
            do throws(EventInputError) {
                return .registration(try SDKRegistrationForm(body: body, platform: platform, time: time).registration)
            } catch {
                throw reader.failure("stored SDK registration form is invalid: \(error.message)")
            }
        case registrationTag:
            let platform = try decodePlatform(&reader)
            let integrationKey = try reader.string()
            let token = try reader.string()
            var registration = Registration(
                platform: platform, integrationKey: integrationKey, registrationToken: token,
                time: EventTime(nanosecondsSinceEpoch: 0)
            )
            for field in Registration.optionalTextFields {
                registration[keyPath: field.keyPath] = try reader.optionalString()
            }
            let paramCount = try reader.varint()
            if paramCount > 0 {
                guard paramCount - 1 <= UInt64(reader.bytes.count - reader.offset) else {
                    throw reader.failure("parameter count \(paramCount - 1) is too large")
                }
                var params: [AdditionalParameter] = []
                params.reserveCapacity(Int(paramCount - 1))
                for _ in 0..<(paramCount - 1) {
                    let name = try reader.string()
                    switch try reader.u8() {
                    case 1: params.append(AdditionalParameter(name: name, value: .string(try reader.string())))
                    case 2: params.append(AdditionalParameter(name: name, value: .number(try reader.string())))
                    case 3: params.append(AdditionalParameter(name: name, value: .bool(false)))
                    case 4: params.append(AdditionalParameter(name: name, value: .bool(true)))
                    case let other: throw reader.failure("unknown parameter type \(other)")
                    }
                }
                registration.additionalParams = params
            }
            registration.time = try decodeTime(&reader, previousTime: &previousTime)
            return .registration(registration)
        default:
            throw reader.failure("unknown event tag \(tag)")
        }
    }

    private static func decodePlatform(_ reader: inout BinaryReader) throws(BinaryReader.Failure) -> Platform {
        switch try reader.u8() {
        case 1: return .ios
        case 2: return .android
        case let other: throw reader.failure("unknown platform code \(other)")
        }
    }

    private static func decodeMessageID(_ reader: inout BinaryReader) throws(BinaryReader.Failure) -> MessageID {
        switch try reader.u8() {
        case 0:
            return MessageID(decimal: try reader.signedVarint())
        case let form where form == 1 || form == 2:
            let bytes = (UInt64(bigEndian: try reader.u64()), UInt64(bigEndian: try reader.u64()))
            let uppercase = form == 2
            return MessageID(uncheckedText: MessageID.uuidText(bytes, uppercase: uppercase), form: .uuid(bytes, uppercase: uppercase))
        case 3:
            let text = try reader.string()
            do throws(EventInputError) {
                return try MessageID(text)
            } catch {
                throw reader.failure("stored messageId is invalid: \(error.message)")
            }
        case let other:
            throw reader.failure("unknown messageId form \(other)")
        }
    }

    private static func decodeTime(_ reader: inout BinaryReader, previousTime: inout Int64) throws(BinaryReader.Failure) -> EventTime {
        let nanos = previousTime &+ (try reader.signedVarint())
        previousTime = nanos
        let flags = try reader.u8()
        let digits = flags & 0x0F
        guard digits <= 9, flags & 0xE0 == 0 else { throw reader.failure("invalid time flags 0x\(String(flags, radix: 16))") }
        var offset: Int16? = nil
        if flags & 0x10 != 0 {
            let minutes = try reader.signedVarint()
            guard minutes > -24 * 60, minutes < 24 * 60 else { throw reader.failure("UTC offset \(minutes) minutes is out of range") }
            offset = Int16(minutes)
        }
        return EventTime(nanosecondsSinceEpoch: nanos, utcOffsetMinutes: offset, fractionDigits: digits)
    }
}
