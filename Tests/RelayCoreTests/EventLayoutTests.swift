import RelayCore
import TestTiers
import Testing

/// Events are moved and copied at every step of the ingest path (decoded, validated, appended,
/// encoded, read back, counted): their size is part of the cost of every event.
@Suite("Event layout", .tier(.fast))
struct EventLayoutTests {
    @Test("an event takes a tracking hit's size, not a registration's: registrations are boxed")
    func eventIsTheSizeOfATrackingHit() {
        let event = MemoryLayout<Event>.size
        let tracking = MemoryLayout<TrackingEvent>.size
        let registration = MemoryLayout<Registration>.size
        print("sizes in bytes: Event \(event), TrackingEvent \(tracking), Registration \(registration)")
        #expect(registration > tracking, "the reason for boxing registrations")
        #expect(event <= tracking + 8, "Event \(event) bytes, TrackingEvent \(tracking), Registration \(registration)")
    }
}
