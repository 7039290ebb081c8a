import CampaignProtocol
import CampaignSDKForm
import RelayCore
import RelayEventJSON
import RelayTestSupport
import TestTiers
import Testing

@testable import RelayLog

/// Every field of every event survives the binary encoding and a frame, bit for bit.
@Suite("Binary event encoding", .tier(.fast))
struct EventBinaryCodecTests {
    static let times: [EventTime] = [
        EventTime(nanosecondsSinceEpoch: 0, utcOffsetMinutes: nil, fractionDigits: 0),
        EventTime(nanosecondsSinceEpoch: 1_795_255_200_123_456_789, utcOffsetMinutes: nil, fractionDigits: 9),
        EventTime(nanosecondsSinceEpoch: 1_795_255_200_500_000_000, utcOffsetMinutes: 60, fractionDigits: 1),
        EventTime(nanosecondsSinceEpoch: -86_400_000_000_000, utcOffsetMinutes: -330, fractionDigits: 3),
        EventTime(nanosecondsSinceEpoch: Int64.max, utcOffsetMinutes: 0, fractionDigits: 6),
    ]

    static func messageIds() throws -> [MessageID] {
        try [
            "55336", "0", "-1709416000", "9223372036854775807", "-9223372036854775808", "007", "+12",
            "6b6499a8-9d43-4bc5-acf0-b6aeb96846f6", "6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6", "6b6499A8-9d43-4bc5-acf0-b6aeb96846f6",
        ].map { try MessageID($0) }
    }

    static func events() throws -> [Event] {
        var events: [Event] = []
        for (index, id) in try messageIds().enumerated() {
            for action in TrackingAction.allCases {
                events.append(
                    .tracking(
                        TrackingEvent(
                            action: action, messageId: id, deliveryId: "f0190-\(index)",
                            integrationKey: index.isMultiple(of: 2) ? nil : "key-\(index)", time: times[index % times.count]
                        )
                    )
                )
            }
        }
        events.append(
            .registration(
                Registration(
                    platform: .android, integrationKey: "testIntegrationKey", registrationToken: "testToken", userKey: "testUser",
                    deviceImei: "12345", deviceName: "mockDevice", deviceModel: "mockDeviceName", deviceBrand: "mockDeviceBrand",
                    deviceManufacturer: "mockDeviceManufacturer", osName: "android", osVersion: "mockOSName mockOSVersion",
                    osLanguage: "mocklocale", additionalParams: [AdditionalParameter(name: "key", value: .string("value"))], time: times[1]
                )
            )
        )
        events.append(
            .registration(
                Registration(
                    platform: .ios, integrationKey: "k", registrationToken: "70757368546f6b656e", userKey: "",
                    deviceName: "Ada’s iPhone \u{1F4F1}", osVersion: "iOS 17.2",
                    additionalParams: [
                        AdditionalParameter(name: "userPoints", value: .number("3233")),
                        AdditionalParameter(name: "email", value: .string("email@email.com")),
                        AdditionalParameter(name: "optIn", value: .bool(true)),
                        AdditionalParameter(name: "vip", value: .bool(false)),
                        AdditionalParameter(name: "ratio", value: .number("-1.5e3")),
                    ],
                    time: times[2]
                )
            )
        )
        events.append(.registration(Registration(platform: .ios, integrationKey: "k", registrationToken: "t", additionalParams: [], time: times[3])))
        events.append(.registration(Registration(platform: .android, integrationKey: "k", registrationToken: "t", time: times[4])))
        // Entries of a keyed request (tag 5), one of them also a copy (tag 4 inside tag 5).
        var keyed = events[0]
        keyed.request = RequestIdentity(key: "order-42 é", index: 0)
        events.append(keyed)
        var keyedCopy = events[events.count - 3]
        keyedCopy.request = RequestIdentity(key: "order-42 é", index: 70_000)
        keyedCopy.origin = EventOrigin(sequence: 12)
        events.append(keyedCopy)
        // Handed on by other relays (tag 6): first origin only; with the hop; around a copy.
        let edge = try RelayPosition(relayID: "598EF5B4-921C-4BA5-B8E1-EF71A5E2A510", epoch: 2, sequence: 1_000_000_007)
        let regional = try RelayPosition(relayID: "0b6a1c1e-7f43-4d7e-9a51-2f1c8d3e4b5a", epoch: 1, sequence: 42)
        var relayed = events[1]
        relayed.chain = ChainOrigin(first: edge)
        events.append(relayed)
        var chained = events[3]
        chained.chain = ChainOrigin(first: edge, hop: regional)
        events.append(chained)
        var relayedCopy = events[0]
        relayedCopy.origin = EventOrigin(sequence: 5)
        relayedCopy.chain = ChainOrigin(first: regional)
        events.append(relayedCopy)
        return events
    }

    @Test("a chain origin round-trips in 18 to 40 bytes with the event it wraps; the relay id in lower case; nesting refused")
    func chainOrigin() throws {
        let event = try Self.events()[1]
        let plain = EventBinaryCodec.encode([event])
        var relayed = event
        let edge = try RelayPosition(relayID: "598EF5B4-921C-4BA5-B8E1-EF71A5E2A510", epoch: 1, sequence: 7)
        #expect(edge.relayID == "598ef5b4-921c-4ba5-b8e1-ef71a5e2a510")
        relayed.chain = ChainOrigin(first: edge)
        let bytes = EventBinaryCodec.encode([relayed])
        #expect(bytes.first == 6, "tag 6 comes first")
        #expect(bytes.count - plain.count == 1 + 16 + 1 + 1 + 1, "tag, relay id, epoch, sequence, no hop")
        #expect(try EventBinaryCodec.decode(bytes, count: 1) == [relayed])
        // A hop equal to the first origin is not stored twice.
        #expect(ChainOrigin(first: edge, hop: edge).hop == nil)
        // A tag 6 inside a tag 6: refused.
        #expect(throws: EventBinaryCodec.DecodingError.self) { try EventBinaryCodec.decode([6] + Array(bytes[1..<20]) + bytes, count: 1) }
        // Epoch 0 is not an epoch.
        var zeroEpoch = bytes
        zeroEpoch[17] = 0
        #expect(throws: EventBinaryCodec.DecodingError.self) { try EventBinaryCodec.decode(zeroEpoch, count: 1) }
        // The JSON format (wal dump, ingest) carries it both ways, and refuses a hop alone.
        var chained = relayed
        chained.chain = ChainOrigin(first: edge, hop: try RelayPosition(relayID: "0b6a1c1e-7f43-4d7e-9a51-2f1c8d3e4b5a", epoch: 3, sequence: 9))
        let json = EventEncoder.json(chained)
        #expect(
            json.hasSuffix(
                #","relayOrigin":{"relayId":"598ef5b4-921c-4ba5-b8e1-ef71a5e2a510","epoch":1,"sequence":7},"relayHop":{"relayId":"0b6a1c1e-7f43-4d7e-9a51-2f1c8d3e4b5a","epoch":3,"sequence":9}}"#
            ), "\(json)")
        #expect(try EventDecoder.decode(json, defaultTime: EventTime(nanosecondsSinceEpoch: 0)) == chained)
        let hopAlone = json.replacingOccurrences(
            of: #""relayOrigin":{"relayId":"598ef5b4-921c-4ba5-b8e1-ef71a5e2a510","epoch":1,"sequence":7},"#, with: "")
        let error = try #require(throws: EventInputError.self) { try EventDecoder.decode(hopAlone, defaultTime: EventTime(nanosecondsSinceEpoch: 0)) }
        #expect(error.field == "relayHop")
        // Not a UUID, or epoch or sequence 0: refused where positions are made.
        #expect(throws: EventInputError.self) { try RelayPosition(relayID: "edge-1", epoch: 1, sequence: 1) }
        #expect(throws: EventInputError.self) { try RelayPosition(relayID: edge.relayID, epoch: 0, sequence: 1) }
    }

    @Test("a request identity round-trips with the event it wraps, and is refused empty or nested")
    func requestIdentity() throws {
        var event = try Self.events()[1]
        event.request = RequestIdentity(key: "k", index: 3)
        let bytes = EventBinaryCodec.encode([event])
        #expect(bytes.first == 5, "tag 5 comes first")
        #expect(try EventBinaryCodec.decode(bytes, count: 1) == [event])
        // Tag 5, an empty key, index 0, then the event: refused.
        var emptyKey: [UInt8] = [5, 0, 0]
        emptyKey += EventBinaryCodec.encode([try Self.events()[1]])
        #expect(throws: EventBinaryCodec.DecodingError.self) { try EventBinaryCodec.decode(emptyKey, count: 1) }
        // A tag 5 inside a tag 5: refused.
        let nested: [UInt8] = [5, 1, 0x6B, 0] + bytes
        #expect(throws: EventBinaryCodec.DecodingError.self) { try EventBinaryCodec.decode(nested, count: 1) }
    }

    @Test("a tenant is the outermost wrapper (tag 7, then its name), round-trips, and is refused invalid, nested or inside another wrapper")
    func tenant() throws {
        let event = try Self.events()[1]
        let plain = EventBinaryCodec.encode([event])
        var tenanted = event
        tenanted.tenant = try TenantName(validating: "brand-a")
        let bytes = EventBinaryCodec.encode([tenanted])
        #expect(bytes == [7, 7] + Array("brand-a".utf8) + plain, "tag 7, the name's length and bytes, then the event as it is alone")
        #expect(try EventBinaryCodec.decode(bytes, count: 1) == [tenanted])
        // Outermost whatever else wraps it: tenant, request, chain, origin.
        var everything = tenanted
        everything.origin = EventOrigin(sequence: 4)
        everything.chain = ChainOrigin(first: try RelayPosition(relayID: "598ef5b4-921c-4ba5-b8e1-ef71a5e2a510", epoch: 1, sequence: 7))
        everything.request = RequestIdentity(key: "k", index: 2)
        let wrapped = EventBinaryCodec.encode([everything])
        #expect(Array(wrapped.prefix(10)) == [7, 7] + Array("brand-a".utf8) + [5])
        #expect(try EventBinaryCodec.decode(wrapped, count: 1) == [everything])
        // The name follows the rules of names: upper case, too long, reserved, empty.
        for name in ["Brand-A", String(repeating: "a", count: 64), "default", "v1", ""] {
            let forged = [7, UInt8(name.utf8.count)] + Array(name.utf8) + plain
            let error = try #require(throws: EventBinaryCodec.DecodingError.self) { try EventBinaryCodec.decode(forged, count: 1) }
            #expect(error.reason.hasPrefix("stored tenant is invalid: tenant \(name.quotedForMessage) "), "\(error)")
        }
        // A tenant inside a tenant, or inside a request identity: refused (a writer puts it outermost, once).
        let twice = [7, 1, UInt8(ascii: "b")] + bytes
        #expect(
            try #require(throws: EventBinaryCodec.DecodingError.self) { try EventBinaryCodec.decode(twice, count: 1) }.reason
                == "a tenant inside a tenant")
        let insideRequest = [5, 1, UInt8(ascii: "k"), 0] + bytes
        #expect(
            try #require(throws: EventBinaryCodec.DecodingError.self) { try EventBinaryCodec.decode(insideRequest, count: 1) }.reason
                == "a request identity or tenant inside a request identity")
        // The JSON format carries it both ways.
        let json = EventEncoder.json(tenanted)
        #expect(json.hasSuffix(#","tenant":"brand-a"}"#), "\(json)")
        #expect(try EventDecoder.decode(json, defaultTime: EventTime(nanosecondsSinceEpoch: 0)) == tenanted)
    }

    @Test("encode then decode gives back every event, each field and its form")
    func roundTrip() throws {
        let events = try Self.events()
        let decoded = try EventBinaryCodec.decode(EventBinaryCodec.encode(events), count: events.count)
        #expect(decoded == events)
        for (original, copy) in zip(events, decoded) {
            // Equality of MessageID compares text; also check the form survived.
            if case .tracking(let a) = original, case .tracking(let b) = copy {
                #expect(a.messageId.form == b.messageId.form)
                #expect(a.messageId.wireForm == b.messageId.wireForm)
            }
            #expect(EventEncoder.json(original) == EventEncoder.json(copy))
        }
    }

    @Test("a compact event of the common shape takes few bytes before compression")
    func compactness() throws {
        let event = Event.tracking(
            TrackingEvent(action: .open, messageId: try MessageID("55336"), deliveryId: "f0190", time: Self.times[1])
        )
        // tag, action, form + varint(3), string(1+5), absent key, time delta (9) + flags.
        #expect(EventBinaryCodec.encode([event]).count == 1 + 1 + 1 + 3 + 6 + 1 + 9 + 1)
    }

    @Test("frames carry their sequence numbers and checksums, compressed or stored", arguments: [Int32(0), 1, 9])
    func frameRoundTrip(level: Int32) throws {
        let events = try Self.events()
        let frame = Frame.encode(events, firstSequence: 42, compressionLevel: level)
        let header = try frame.withUnsafeBufferPointer { FrameHeader.decode($0) }.get()
        #expect(header.firstSequence == 42)
        #expect(header.eventCount == UInt32(events.count))
        #expect(header.codec == (level == 0 ? .stored : .zlib))
        #expect(header.frameSize == frame.count)
        let stored = Array(frame[FrameHeader.size...])
        #expect(Zlib.crc32(stored) == header.payloadCRC)
        let decoded = try stored.withUnsafeBufferPointer { buffer throws(FrameDecodingError) in
            try Frame.decodeEvents(header, stored: buffer, keys: nil)
        }
        #expect(decoded == events)
    }

    @Test(
        "a group commit of more than 1 MiB of encoding or more than 4,096 events is split into frames that each restart the time deltas",
        arguments: [false, true])
    func groupSplitsIntoFrames(largeEvents: Bool) throws {
        // Three appenders; about 2.6 MiB of encoding in all, with times that differ from frame to
        // frame. Large events reach 1 MiB in fewer than 4,096 events; small ones reach 4,096
        // events first.
        func event(_ number: Int64) -> Event {
            let time = EventTime(nanosecondsSinceEpoch: 1_700_000_000_000_000_000 + number * 1_000_003, fractionDigits: 6)
            let delivery = largeEvents ? "delivery-\(number % 977)-" + String(repeating: "x", count: 300) : "delivery-\(number % 977)"
            let hit = TrackingEvent(
                action: .open, messageId: MessageID(decimal: number * 7919), deliveryId: delivery, integrationKey: nil, time: time)
            return .tracking(hit)
        }
        let perGroup = largeEvents ? 3_000 : 45_000
        let groups: [[Event]] = (0..<3).map { group in (0..<perGroup).map { event(Int64(group * perGroup + $0)) } }
        let (bytes, written, _) = Frame.encodeGroup(groups, firstSequence: 1000, compressionLevel: 1)
        var offset = 0
        var walked: [(Int, UInt64, UInt32)] = []
        var next: UInt64 = 1000
        var decoded: [Event] = []
        var frames = 0
        var lengths: [Int] = []
        var counts: [Int] = []
        while offset < bytes.count {
            let header = try bytes[offset..<(offset + FrameHeader.size)].withUnsafeBufferPointer { FrameHeader.decode($0) }.get()
            #expect(header.firstSequence == next)
            #expect(Int(header.uncompressedLength) < Frame.maximumUncompressedBytes + 400, "a frame passes the limit by at most one event")
            #expect(header.eventCount <= UInt32(Frame.maximumEvents))
            lengths.append(Int(header.uncompressedLength))
            counts.append(Int(header.eventCount))
            walked.append((offset, header.firstSequence, header.payloadCRC))
            let stored = Array(bytes[(offset + FrameHeader.size)..<(offset + header.frameSize)])
            // Each frame decodes on its own: its first time delta is from 0.
            decoded += try stored.withUnsafeBufferPointer { buffer throws(FrameDecodingError) in
                try Frame.decodeEvents(header, stored: buffer, keys: nil)
            }
            next = header.endSequence
            offset += header.frameSize
            frames += 1
        }
        #expect(frames == written.count)
        // Where the group says its frames are (the log hands their events to its readers by it).
        #expect(written.map { "\($0.byteOffset) \($0.header.firstSequence) \($0.header.payloadCRC)" } == walked.map { "\($0.0) \($0.1) \($0.2)" })
        // Split only where needed: every frame but the last reached the limit that applies.
        if largeEvents {
            #expect(frames == 3)
            #expect(lengths.dropLast().allSatisfy { $0 >= Frame.maximumUncompressedBytes })
        } else {
            #expect(frames == (135_000 + Frame.maximumEvents - 1) / Frame.maximumEvents)
            #expect(counts.dropLast().allSatisfy { $0 == Frame.maximumEvents })
        }
        #expect(next == 1000 + UInt64(3 * perGroup))
        #expect(decoded == groups.flatMap { $0 })
    }

    @Test("a damaged header is refused with the reason")
    func damagedHeader() throws {
        var frame = Frame.encode(try Self.events(), firstSequence: 1, compressionLevel: 1)
        frame[9] ^= 0x01
        let result = frame.withUnsafeBufferPointer { FrameHeader.decode($0) }
        #expect(throws: FrameHeader.Problem.headerChecksum) { try result.get() }
        frame[0] = 0
        #expect(throws: FrameHeader.Problem.badMagic) { try frame.withUnsafeBufferPointer { FrameHeader.decode($0) }.get() }
    }

    @Test("truncated, corrupted or garbage payloads throw or decode whole, never crash", arguments: 0..<96)
    func garbage(seed: Int) throws {
        let events = try Self.events()
        let payload = EventBinaryCodec.encode(events)
        var generator = SeededGenerator(seed: UInt64(seed))
        switch seed % 3 {
        case 0:
            // Cut short: never enough bytes for every event.
            let damaged = Array(payload.prefix(Int.random(in: 0..<payload.count, using: &generator)))
            #expect(throws: EventBinaryCodec.DecodingError.self) { try EventBinaryCodec.decode(damaged, count: events.count) }
        case 1:
            // Cut short and a byte changed.
            var damaged = Array(payload.prefix(Int.random(in: 1..<payload.count, using: &generator)))
            damaged[Int.random(in: 0..<damaged.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            #expect(throws: EventBinaryCodec.DecodingError.self) { try EventBinaryCodec.decode(damaged, count: events.count) }
        default:
            // The full length with 1 to 8 bytes changed: either a typed error, or exactly `count`
            // events (a change inside a text can still be text).
            var damaged = payload
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                damaged[Int.random(in: 0..<damaged.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            do {
                let decoded = try EventBinaryCodec.decode(damaged, count: events.count)
                #expect(decoded.count == events.count)
            } catch {
                #expect(error.offset >= 0 && error.offset <= damaged.count, "\(error)")
            }
        }
    }
}

@Suite("Binary codec: the SDK's wire forms", .tier(.fast))
struct WireFormCodecTests {
    @Test("an SDK registration and hex message ids round-trip exactly")
    func wireFormsRoundTrip() throws {
        let time = EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000)
        let form = try SDKRegistrationForm(body: "registrationToken=%7Bx+y%7D&mobileAppUuid=key&unknown=1&userKey=u", platform: .ios, time: time)
        let events: [Event] = [
            .registration(form.registration),
            .tracking(TrackingEvent(action: .open, messageId: try MessageID("hffffffff9a1c61c0"), deliveryId: "d", time: time)),
            .tracking(TrackingEvent(action: .impression, messageId: try MessageID("h05"), deliveryId: "d", time: time)),
        ]
        let decoded = try EventBinaryCodec.decode(EventBinaryCodec.encode(events), count: events.count)
        #expect(decoded == events)
        guard case .registration(let registration) = decoded[0] else {
            Issue.record("not a registration")
            return
        }
        #expect(registration.sdkForm == "registrationToken=%7Bx+y%7D&mobileAppUuid=key&unknown=1&userKey=u")
        #expect(registration.registrationToken == "{x y}")
        guard case .tracking(let hit) = decoded[2] else {
            Issue.record("not a hit")
            return
        }
        #expect(hit.messageId.wireForm == "05")
    }

    /// Found by the event-codec fuzz target: a count taken from a damaged or forged frame header
    /// reserved memory for that many events before reading one (0x452c0f7728 bytes for 29 bytes of
    /// payload), and the process died. A count the payload cannot hold is now refused first.
    @Test("a count larger than the payload's bytes is refused before anything is reserved")
    func impossibleCount() throws {
        let payload = EventBinaryCodec.encode([TestEvents.tracking(1)])
        #expect(try EventBinaryCodec.decode(payload, count: 1).count == 1)
        do {
            _ = try EventBinaryCodec.decode(payload, count: 1 << 40)
            Issue.record("a count of 2^40 events in \(payload.count) bytes was accepted")
        } catch {
            #expect(error.offset == 0)
            #expect(error.reason == "1099511627776 events cannot fit in \(payload.count) payload bytes")
        }
    }

    /// Found by the event-codec fuzz target: wrapper tags (origin, chain origin, request identity)
    /// were refused as nested only after decoding what they wrap, so a run of them recursed once
    /// per two bytes and overflowed the stack (1,188 bytes were enough under AddressSanitizer; a
    /// relay batch may hold 64 MiB). The depth is checked before each level now.
    @Test("a run of wrapper tags is refused at the fifth, without recursing through the rest")
    func wrapperRun() throws {
        let event = EventBinaryCodec.encode([TestEvents.tracking(1)])
        let run = [UInt8]((0..<100_000).flatMap { _ in [EventBinaryCodec.originTag, 1] }) + event
        do {
            _ = try EventBinaryCodec.decode(run, count: 1)
            Issue.record("200,000 bytes of origin tags were accepted")
        } catch {
            #expect(error.offset == 9)
            #expect(error.reason == "more than 4 wrappers around one event")
        }
        // Four wrappers, each kind once, still decode.
        var wrapped = TestEvents.tracking(2)
        wrapped.origin = EventOrigin(sequence: 9)
        wrapped.request = RequestIdentity(key: "k", index: 0)
        wrapped.chain = ChainOrigin(first: try RelayPosition(relayID: "598ef5b4-921c-4ba5-b8e1-ef71a5e2a510", epoch: 1, sequence: 7))
        wrapped.tenant = try TenantName(validating: "t")
        let bytes = EventBinaryCodec.encode([wrapped])
        #expect(try EventBinaryCodec.decode(bytes, count: 1) == [wrapped])
    }
}
