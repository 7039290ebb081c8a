import CampaignProtocol
import RelayChain
import RelayCore
import RelayEventJSON
import RelayLog

/// Valid inputs each campaign starts from (libFuzzer mutates them; `Fuzz/fuzz.sh` writes them into
/// an empty corpus). Built with the relay's own encoders, so they follow the formats as they are.
public enum FuzzSeeds {
    /// The seeds of `target`.
    public static func inputs(for target: FuzzTarget) -> [[UInt8]] {
        switch target {
        case .jsonValue: (jsonLines + [#"[1,-2.5e-3,true,false,null,"\u00e9\ud83d\ude00",{"a":[{}]}]"#]).map { Array($0.utf8) }
        case .jsonEvents:
            [Array(jsonLines.joined(separator: "\n").utf8), Array(("[" + jsonLines.joined(separator: ",") + "]").utf8)]
                + jsonLines.map { Array($0.utf8) }
        case .sdkForm: sdkForms.flatMap { body in Platform.allCases.indices.map { [UInt8($0)] + Array(body.utf8) } }
        case .trackingHit: hitIDs.map { Array($0.utf8) }
        case .retryAfter:
            [
                "120", "0", " 7 ", "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
                "Mon, 23 Nov 2026 00:00:00 GMT",
            ].map { Array($0.utf8) }
        case .walSegment: walSegments
        case .eventCodec: eventGroups.map { littleEndian(UInt64($0.count), bytes: 4) + EventBinaryCodec.encode($0) }
        case .cursorFile: [1, 42, 1 << 40].map { CursorFile(position: $0, writtenAtNanoseconds: 1_763_000_000_000_000_000).encoded() }
        case .relayBatch:
            eventGroups.flatMap { events -> [[UInt8]] in
                let sequenced = events.enumerated().map { SequencedEvent(sequence: UInt64(100 + 2 * $0.offset), event: $0.element) }
                let header = littleEndian(100, bytes: 8) + littleEndian(UInt64(2 * events.count + 1), bytes: 2)
                return [0, 6].map { header + RelayBatchBody.encode(sequenced, first: 100, compressionLevel: $0) }
            }
        }
    }

    static let jsonLines = [
        #"{"kind":"track","action":"click","messageId":"55336","deliveryId":"f0190","integrationKey":"key-1","time":"2026-11-21T12:00:00.250+02:00"}"#,
        #"{"kind":"track","action":"impression","messageId":"0b1fd1a4-4b4f-4ab1-b3bb-5e2c5d3b6a11","deliveryId":"d-2"}"#,
        #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d"}"#,
        #"{"kind":"register","platform":"ios","integrationKey":"later","registrationToken":"aa01","time":"2026-11-21T10:00:00Z"}"#,
        #"{"kind":"register","platform":"android","integrationKey":"app","registrationToken":"t1","userKey":"u","additionalParams":{"points":3233,"email":"a@b.c","vip":true}}"#,
        #"{"kind":"track","action":"open","messageId":"7","deliveryId":"d","tenant":"brand-a","relayOrigin":{"relayId":"598ef5b4-921c-4ba5-b8e1-ef71a5e2a510","epoch":1,"sequence":7}}"#,
    ]

    static let sdkForms = [
        "registrationToken=testToken&mobileAppUuid=testIntegrationKey&userKey=testUser&deviceImei=12345&deviceName=mockDevice&deviceModel=mockDeviceName&deviceBrand=mockDeviceBrand&deviceManufacturer=mockDeviceManufacturer&osName=android&osVersion=mockOSName%20mockOSVersion&osLanguage=mocklocale&additionalParams=%3CadditionalParameters%3E%3Cparam%20name%3D%22key%22%20value%3D%22value%22%2F%3E%3C%2FadditionalParameters%3E",
        "registrationToken=70757368546f6b656e&mobileAppUuid=key&additionalParams=%3CadditionalParams%3E%3Cparam%20name%3D%22email%22%20value%3D%22email%40email.com%22%20%2F%3E%3Cparam%20name%3D%22userPoints%22%20value%3D%223233%22%20%2F%3E%3C%2FadditionalParams%3E",
        "<additionalParams><param name=\"a&amp;b\" value=\"&lt;1&gt;\"/></additionalParams>",
    ]

    static let hitIDs = [
        "hd828,deliveryId,2", "h5c4,f0190,1", "h0b1fd1a4-4b4f-4ab1-b3bb-5e2c5d3b6a11,d-2,1", "h%35c4%2Cf0190%2C2", "hFFFFFFFFFFFFFFFF,x,2",
    ]

    static var eventGroups: [[Event]] {
        let lines = jsonLines.compactMap { try? EventDecoder.decode($0, defaultTime: JSONEventsTarget.defaultTime) }
        var keyed = lines
        for index in keyed.indices { keyed[index].request = RequestIdentity(key: "retry-key", index: index) }
        // Every event of a tenant (tag 7), the keyed ones with all four wrappers.
        var tenanted = keyed
        for index in tenanted.indices {
            tenanted[index].tenant = try? TenantName(validating: index % 2 == 0 ? "brand-a" : "b")
            tenanted[index].origin = EventOrigin(sequence: UInt64(index + 1))
        }
        return [lines, Array(lines.prefix(1)), keyed, tenanted]
    }

    static var walSegments: [[UInt8]] {
        let groups = eventGroups
        var frames: [UInt8] = []
        var next: UInt64 = 1
        for events in groups {
            frames += Frame.encode(events, firstSequence: next, compressionLevel: 1)
            next += UInt64(events.count)
        }
        let stored = Frame.encode(groups[0], firstSequence: 1, compressionLevel: 0)
        return [frames, stored, frames + [UInt8](repeating: 0, count: 64), Array(frames.dropLast(7))]
    }

    static func littleEndian(_ value: UInt64, bytes: Int) -> [UInt8] {
        (0..<bytes).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
}
