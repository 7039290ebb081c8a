import RelayLog
import Synchronization
import TestTiers
import Testing

/// An erasure waits for the sends of its registrations already on the wire, and learns which were
/// delivered; a send that begins after the mask is refused.
@Suite("Erasure mask and sends on the wire", .timeLimit(.minutes(10)), .tier(.fast))
struct ErasureMaskSendsTests {
    @Test("masking waits for the sends on the wire of what it masks, not for others', and returns those delivered, by sender")
    func waitsForSendsOnTheWire() async throws {
        let mask = ErasureMask()
        #expect(mask.beginSending([1, 2, 3]).isEmpty)
        #expect(mask.beginSending([2]).isEmpty, "a second lane sends 2 too")
        let waitedFor = Atomic<Int>(0)
        let erasure = Task { await mask.insertAwaitingSends([2, 3, 4]) { waitedFor.store($0, ordering: .releasing) } }
        // The erasure waiting for its two registrations on the wire (the suite's time limit guards a hang).
        while waitedFor.load(ordering: .acquiring) != 2 { try await Task.sleep(for: .milliseconds(1)) }
        // Masked from now on: no send of them begins, others' still do.
        #expect(mask.beginSending([2, 4, 5]) == [2, 4])
        mask.endSending([5], deliveredBy: "upload-marketing")
        mask.endSending([1], deliveredBy: "upload-marketing")
        mask.endSending([3], deliveredBy: "upload-marketing")
        mask.endSending([2], deliveredBy: nil)
        mask.endSending([2], deliveredBy: "upload-relay")
        // Returned only once the last send of 2 ended: the two deliveries made after the mask went in.
        #expect(await erasure.value == ["upload-marketing": [3], "upload-relay": [2]])
        #expect(mask.contains(2) && mask.contains(4) && !mask.contains(1))
    }

    @Test("with nothing on the wire, masking returns at once and does not call whenWaiting")
    func nothingOnTheWire() async {
        let mask = ErasureMask()
        #expect(mask.beginSending([7]).isEmpty)
        mask.endSending([7], deliveredBy: "upload-marketing")
        let delivered = await mask.insertAwaitingSends([7]) { _ in Issue.record("nothing was on the wire") }
        #expect(delivered.isEmpty, "delivered before the mask went in: not the erasure's to count")
        #expect(mask.beginSending([7]) == [7])
    }
}
