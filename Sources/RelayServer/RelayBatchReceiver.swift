import Logging
import RelayChain
import RelayCore
import RelayIO
import RelayLog

/// The central side of a relay chain: takes batches of other relays' events, appends what is new,
/// and keeps the ``OriginLedger`` that says what is new.
///
/// Batches are taken one at a time, so two copies of one batch (a retry racing a slow answer) are
/// never both appended. The ledger is rebuilt from the log before the first batch: every event a
/// relay handed on keeps its sender's position in the log, so the ledger cannot disagree with it.
actor RelayBatchReceiver {
    /// What became of a batch.
    enum Outcome: Sendable, Hashable {
        /// `appended` events stored (0 when all was stored already); `next` is expected next.
        case stored(appended: Int, alreadyStored: Bool, next: UInt64)
        /// Sequences are missing before the batch.
        case gap(expected: UInt64)
        /// The batch's epoch is older than the relay's current one.
        case staleEpoch(current: UInt32)
    }

    let ingestor: EventIngestor
    private let logger: Logger
    private var ledger: OriginLedger?
    /// One batch at a time: the ledger's decision and the append it leads to span awaits.
    private let turns = TurnQueue()

    init(ingestor: EventIngestor, logger: Logger) {
        self.ingestor = ingestor
        self.logger = logger
    }

    /// Decides on `events`, the batch `origin` of a relay, and appends what is new; counts the
    /// answer per sending relay in the metrics. `sender` is the sending relay's position at the
    /// batch's first sequence (its id parsed once, for every event it stamps).
    func receive(_ events: [SequencedEvent], origin: OriginLedger.BatchOrigin, sender: RelayPosition) async throws(EventIngestor.Refusal)
        -> Outcome
    {
        await turns.take()
        defer { turns.end() }
        let outcome = try await decideAndAppend(events, origin: origin, sender: sender)
        switch outcome {
        case .stored(let appended, let alreadyStored, _):
            ingestor.metrics.recordRelayBatch(from: origin.relayID, answer: alreadyStored ? "already_stored" : "appended", appended: appended)
            // A batch sent again (its answer was lost, or the sender lost its position) is normal
            // after a failure, and worth a line: it is where exactly-once does its work.
            if alreadyStored {
                logger.notice(
                    "relay batch already stored; answered so, nothing appended",
                    metadata: ["relay-id": "\(origin.relayID)", "sequences": "\(origin.sequences.lowerBound)-\(origin.sequences.upperBound)"])
            } else if appended < events.count {
                logger.notice(
                    "relay batch partly stored already; appended only its new part",
                    metadata: [
                        "relay-id": "\(origin.relayID)", "sequences": "\(origin.sequences.lowerBound)-\(origin.sequences.upperBound)",
                        "appended": "\(appended)", "already-stored": "\(events.count - appended)",
                    ])
            }
        case .gap(let expected):
            logger.notice(
                "relay batch beyond what is stored; asked for the earlier events",
                metadata: [
                    "relay-id": "\(origin.relayID)", "sequences": "\(origin.sequences.lowerBound)-\(origin.sequences.upperBound)",
                    "expected": "\(expected)",
                ])
            ingestor.metrics.recordRelayBatch(from: origin.relayID, answer: "gap", appended: 0)
        case .staleEpoch:
            ingestor.metrics.recordRelayBatch(from: origin.relayID, answer: "stale_epoch", appended: 0)
        }
        return outcome
    }

    private func decideAndAppend(_ events: [SequencedEvent], origin: OriginLedger.BatchOrigin, sender: RelayPosition) async throws(EventIngestor
        .Refusal) -> Outcome
    {
        var ledger = try await currentLedger()
        switch ledger.decide(origin) {
        case .alreadyStored:
            return .stored(appended: 0, alreadyStored: true, next: ledger.marks[origin.relayID]?.next ?? origin.sequences.upperBound)
        case .gap(let expected):
            return .gap(expected: expected)
        case .staleEpoch(let current):
            logger.error(
                "refused a batch of an older epoch: two copies of one relay's data directory are running, or an old one came back",
                metadata: ["relay-id": "\(origin.relayID)", "batch-epoch": "\(origin.epoch)", "current-epoch": "\(current)"]
            )
            return .staleEpoch(current: current)
        case .append(let range):
            let stamped: [Event] = events.filter { range.contains($0.sequence) }.map { sequenced in
                var event = sequenced.event
                let position = sender.at(sequence: sequenced.sequence)
                // The first origin stays with the event across hops; the sender is this hop.
                event.chain = ChainOrigin(first: event.chain?.first ?? position, hop: position)
                event.request = nil
                return event
            }
            if !stamped.isEmpty { _ = try await ingestor.append(stamped) }
            ledger.appended(origin)
            self.ledger = ledger
            return .stored(appended: stamped.count, alreadyStored: false, next: origin.sequences.upperBound)
        }
    }

    /// The ledger, rebuilt from the log the first time (on a thread made for reading it).
    private func currentLedger() async throws(EventIngestor.Refusal) -> OriginLedger {
        if let ledger { return ledger }
        let log = ingestor.log
        let end = await log.durableSequence
        let start = await log.oldestSequence
        let reader = LogFollower.Steps(log: log, from: start)
        let (_, result) = await BlockingExecutor(name: "relay-ledger").run(moving: reader) {
            (owned: inout LogFollower.Steps) throws(LogError) -> OriginLedger in
            var rebuilt = OriginLedger()
            while true {
                let batch = try owned.read(maximumEvents: 65_536, below: end)
                if batch.events.isEmpty { break }
                for sequenced in batch.events {
                    guard let sender = sequenced.event.chain?.sender else { continue }
                    rebuilt.observe(relayID: sender.relayID, epoch: sender.epoch, sequence: sender.sequence)
                }
            }
            owned.close()
            return rebuilt
        }
        let rebuilt: OriginLedger
        switch result {
        case .success(let value): rebuilt = value
        case .failure(let error):
            // Without the whole ledger a batch could be appended twice: refuse until the log reads.
            logger.error("could not read the log to rebuild the relay ledger; batches wait", metadata: ["error": "\(error)"])
            throw .unavailable("the relay ledger cannot be rebuilt from the log (\(error)); try again", retryAfterSeconds: 5)
        }
        logger.notice("relay ledger rebuilt from the log", metadata: ["relays": "\(rebuilt.marks.count)", "through-sequence": "\(end - 1)"])
        ledger = rebuilt
        return rebuilt
    }
}
