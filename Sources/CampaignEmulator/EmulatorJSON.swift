import Foundation
import RelayCore

/// JSON and date texts of the emulator's inspection API.
enum EmulatorJSON {
    static func encode<Value: Encodable>(_ value: Value) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(value) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    static func decodeFaults(_ bytes: [UInt8]) -> EmulatorFaults? {
        try? JSONDecoder().decode(EmulatorFaults.self, from: Data(bytes))
    }

    struct HitsReport: Encodable {
        var accepted: Int
        var distinct: Int
        var duplicates: Int
        var requests: Int
        /// Requests answered 503 because the capacity's queue was full.
        var overloaded: Int
        var deliveries: [String: [String: Int]]
        var messages: [Message]?
        /// Requests accepted per second since the Unix epoch (the key, as text), with `?seconds=1`.
        var acceptedBySecond: [String: Int]?

        struct Message: Encodable {
            var messageId: String
            var deliveryId: String
            var tag: Int
            var count: Int
        }
    }

    static func hits(
        accepted: Int, distinct: Int, byDelivery: [String: [String: Int]], messages: [EmulatorRecorder.Hit: Int]?, requests: Int, overloaded: Int,
        bySecond: [Int64: Int]?
    ) -> String {
        let list = messages.map { counts in
            counts.map { HitsReport.Message(messageId: $0.key.messageId, deliveryId: $0.key.deliveryId, tag: $0.key.tag, count: $0.value) }
                .sorted { ($0.deliveryId, $0.messageId, $0.tag) < ($1.deliveryId, $1.messageId, $1.tag) }
        }
        return encode(
            HitsReport(
                accepted: accepted, distinct: distinct, duplicates: accepted - distinct, requests: requests, overloaded: overloaded,
                deliveries: byDelivery, messages: list,
                acceptedBySecond: bySecond.map { Dictionary(uniqueKeysWithValues: $0.map { (String($0.key), $0.value) }) }))
    }

    static func registrations(_ registrations: [[String: String]]) -> String {
        encode(["registrations": registrations])
    }

    static func requests(_ requests: [EmulatorRecorder.RawRequest]) -> String {
        encode(["requests": requests])
    }
}
