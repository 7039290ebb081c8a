import RelayCore
import RelayEventJSON

/// The relay's JSON event input: the same bytes as a `POST /v1/events` body (all or nothing) and
/// as `ingest` lines (line by line). Both must agree on what they accept, and every accepted event,
/// written back out by `EventEncoder`, must decode to itself. A body `TrackingBatchScanner` takes,
/// the general path takes too, as the same events.
enum JSONEventsTarget {
    static let defaultTime = EventTime(nanosecondsSinceEpoch: 1_763_000_000_000_000_000, utcOffsetMinutes: 0, fractionDigits: 3)
    static let maximumEvents = 1000

    static func run(_ bytes: [UInt8]) throws(FuzzFinding) {
        let lines = EventLines.decode(bytes, defaultTime: defaultTime)
        try require(lines.events.count == lines.eventLines.count, .jsonEvents, "\(lines.events.count) events for \(lines.eventLines.count) lines")
        try require(
            lines.events.count + lines.rejections.count <= lines.lines, .jsonEvents,
            "\(lines.events.count) events and \(lines.rejections.count) rejections from \(lines.lines) lines")
        let seen = lines.eventLines + lines.rejections.map(\.line)
        try require(Set(seen).count == seen.count, .jsonEvents, "a line both accepted and refused, or counted twice: \(seen)")
        try require(seen.allSatisfy { (1...max(1, lines.lines)).contains($0) }, .jsonEvents, "a line number outside 1...\(lines.lines): \(seen)")
        for event in lines.events { try roundTrip(event) }

        let general = EventBatchDecoder.decodeInGeneral(bytes, defaultTime: defaultTime, maximumEvents: maximumEvents)
        if let scanned = bytes.withUnsafeBufferPointer({
            TrackingBatchScanner.events(in: $0, defaultTime: defaultTime, maximumEvents: maximumEvents, admission: .anyEvent)
        }) {
            try require(general == .success(scanned), .jsonEvents, "the scanner took a body as \(scanned), the general path as \(general)")
        }
        switch general {
        case .success(let events):
            try require(events.count <= maximumEvents, .jsonEvents, "a batch of \(events.count) events over its limit \(maximumEvents)")
            for event in events { try roundTrip(event) }
        case .failure(let problems):
            try require(!problems.list.isEmpty, .jsonEvents, "a refused batch without a problem")
        }
    }

    /// An accepted event written as the relay writes it (`wal dump`, dead letters) reads back the same.
    static func roundTrip(_ event: Event) throws(FuzzFinding) {
        let json = EventEncoder.json(event)
        let again: Event
        do {
            again = try EventDecoder.decode(json, defaultTime: defaultTime)
        } catch {
            throw FuzzFinding(.jsonEvents, "the relay's own JSON \(json) of an accepted event is refused: \(error.message)")
        }
        try require(again == event, .jsonEvents, "\(json) decodes to \(again), not \(event)")
    }
}
