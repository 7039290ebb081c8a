import RelayChain
import TestTiers
import Testing

/// The central relay's deduplication, decision by decision.
@Suite("Origin ledger", .tier(.fast))
struct OriginLedgerTests {
    static let edge = "598ef5b4-921c-4ba5-b8e1-ef71a5e2a510"
    static let other = "0b6a1c1e-7f43-4d7e-9a51-2f1c8d3e4b5a"

    static func batch(_ relay: String, epoch: UInt32 = 1, _ sequences: Range<UInt64>) -> OriginLedger.BatchOrigin {
        .init(relayID: relay, epoch: epoch, sequences: sequences)
    }

    /// A batch of the edge relay.
    static func batch(epoch: UInt32 = 1, _ sequences: Range<UInt64>) -> OriginLedger.BatchOrigin {
        batch(edge, epoch: epoch, sequences)
    }

    /// Decides and, when there is something to append, records it as appended.
    static func deliver(_ batch: OriginLedger.BatchOrigin, to ledger: inout OriginLedger) -> OriginLedger.Decision {
        let decision = ledger.decide(batch)
        if case .append = decision { ledger.appended(batch) }
        return decision
    }

    @Test("a first batch is taken whole from wherever it starts; the next one is expected right after it")
    func firstBatch() {
        var ledger = OriginLedger()
        #expect(Self.deliver(Self.batch(40..<100), to: &ledger) == .append(40..<100))
        #expect(ledger.marks[Self.edge] == OriginLedger.Mark(epoch: 1, next: 100))
        #expect(Self.deliver(Self.batch(100..<150), to: &ledger) == .append(100..<150))
        #expect(ledger.marks[Self.edge]?.next == 150)
    }

    @Test("a batch at or below the mark is already stored, and changes nothing")
    func belowTheMark() {
        var ledger = OriginLedger()
        _ = Self.deliver(Self.batch(1..<100), to: &ledger)
        let before = ledger
        #expect(Self.deliver(Self.batch(1..<100), to: &ledger) == .alreadyStored, "the same batch again (a lost answer)")
        #expect(Self.deliver(Self.batch(50..<100), to: &ledger) == .alreadyStored)
        #expect(Self.deliver(Self.batch(99..<100), to: &ledger) == .alreadyStored)
        #expect(ledger == before)
    }

    @Test("a batch overlapping the mark appends only its new part")
    func overlapping() {
        var ledger = OriginLedger()
        _ = Self.deliver(Self.batch(1..<100), to: &ledger)
        #expect(Self.deliver(Self.batch(60..<180), to: &ledger) == .append(100..<180))
        #expect(ledger.marks[Self.edge]?.next == 180)
        #expect(Self.deliver(Self.batch(179..<181), to: &ledger) == .append(180..<181))
    }

    @Test("a batch beyond the mark is a gap: nothing appended, the expected sequence given")
    func gap() {
        var ledger = OriginLedger()
        _ = Self.deliver(Self.batch(1..<100), to: &ledger)
        #expect(Self.deliver(Self.batch(101..<200), to: &ledger) == .gap(expected: 100))
        #expect(ledger.marks[Self.edge]?.next == 100)
        #expect(Self.deliver(Self.batch(100..<200), to: &ledger) == .append(100..<200))
    }

    @Test("a newer epoch is taken from wherever it starts; an older one is refused from then on")
    func epochs() {
        var ledger = OriginLedger()
        _ = Self.deliver(Self.batch(epoch: 1, 1..<500), to: &ledger)
        // A copy restored from a backup at sequence 300: its new events are epoch 2 from 300 on.
        #expect(Self.deliver(Self.batch(epoch: 2, 300..<350), to: &ledger) == .append(300..<350))
        #expect(ledger.marks[Self.edge] == OriginLedger.Mark(epoch: 2, next: 350))
        // The original, still running, is now stale: refused, however new its numbers.
        #expect(Self.deliver(Self.batch(epoch: 1, 500..<600), to: &ledger) == .staleEpoch(current: 2))
        #expect(Self.deliver(Self.batch(epoch: 1, 1..<10), to: &ledger) == .staleEpoch(current: 2))
        #expect(ledger.marks[Self.edge] == OriginLedger.Mark(epoch: 2, next: 350))
    }

    @Test("two origins interleaved keep marks of their own")
    func twoOrigins() {
        var ledger = OriginLedger()
        #expect(Self.deliver(Self.batch(Self.edge, 1..<100), to: &ledger) == .append(1..<100))
        #expect(Self.deliver(Self.batch(Self.other, 1..<10), to: &ledger) == .append(1..<10))
        #expect(Self.deliver(Self.batch(Self.edge, 1..<100), to: &ledger) == .alreadyStored)
        #expect(Self.deliver(Self.batch(Self.other, 10..<20), to: &ledger) == .append(10..<20))
        #expect(Self.deliver(Self.batch(Self.edge, 150..<160), to: &ledger) == .gap(expected: 100))
        #expect(Self.deliver(Self.batch(Self.other, 5..<25), to: &ledger) == .append(20..<25))
        #expect(ledger.marks == [Self.edge: .init(epoch: 1, next: 100), Self.other: .init(epoch: 1, next: 25)])
    }

    @Test("rebuilt from the events of the log, the ledger decides as the one that appended them")
    func rebuiltFromTheLog() {
        var live = OriginLedger()
        // What reached the log: origin (relay, epoch, sequence) of each appended event. The edge's
        // batch 100..<110 held no event for 105 (damage on the edge).
        var logged: [(String, UInt32, UInt64)] = []
        for (relay, epoch, range) in [
            (Self.edge, UInt32(1), UInt64(1)..<100), (Self.other, 1, 7..<30), (Self.edge, 1, 100..<110), (Self.edge, 2, 60..<80),
        ] {
            let batch = Self.batch(relay, epoch: epoch, range)
            guard case .append(let part) = Self.deliver(batch, to: &live) else { continue }
            logged += part.filter { !(relay == Self.edge && $0 == 105) }.map { (relay, epoch, $0) }
        }
        var rebuilt = OriginLedger()
        for (relay, epoch, sequence) in logged { rebuilt.observe(relayID: relay, epoch: epoch, sequence: sequence) }
        #expect(rebuilt == live)
        for probe in [Self.batch(1..<100), Self.batch(epoch: 2, 70..<90), Self.batch(Self.other, 29..<31), Self.batch(Self.other, 31..<40)] {
            #expect(rebuilt.decide(probe) == live.decide(probe), "\(probe)")
        }
        // Events of an older epoch read after newer ones (a copy's log holds both) never move the mark back or forth.
        rebuilt.observe(relayID: Self.edge, epoch: 1, sequence: 5000)
        #expect(rebuilt.marks[Self.edge] == OriginLedger.Mark(epoch: 2, next: 80))
    }
}
