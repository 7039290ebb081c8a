package import Logging
import NIOConcurrencyHelpers
import RelayCore

/// The read side of the consumer layer: the frames the log's consumers read lately, decoded once
/// and handed to every consumer that reads them, and the damage they met, reported once.
///
/// Every reader the log makes (``WriteAheadLog/reader(from:archiveDirectory:)``) goes through the
/// log's decoder. A consumer still reads and checks each frame's bytes itself (the header and
/// payload CRCs, a few `pread`s from the page cache), so that what it takes is exactly what a reader
/// of its own would take; only inflating and decoding the payload, most of a read's cost, is
/// shared. The first consumer to reach a frame decodes it; one that reaches it while that runs
/// waits for the result rather than decoding it again; later ones take it from memory. The newest
/// ``capacity`` events stay: a consumer that has fallen further behind finds its frames gone and
/// decodes them alone, without keeping them, until it catches up. The others never wait for it,
/// and memory stays bounded.
///
/// A frame is known by its segment, its offset in it and its payload's CRC: a segment's frames
/// never change once durable, and a frame rewritten at the same place after a crash has another
/// payload.
package final class SharedFrameDecoder: Sendable {
    /// Decoded events kept for readers that come later, at most (plus the frames being decoded).
    package let capacity: Int
    private let logger: Logger
    private let state = NIOLockedValueBox(State())

    /// Damage records kept to report each once; older ones may be reported again.
    static let rememberedDamage = 1024

    private struct Key: Hashable {
        var segment: UInt64
        var offset: Int64
        var payloadCRC: UInt32
    }

    /// What a reader does about a frame.
    private enum Role {
        /// Decode it without keeping it (it is older than every frame kept).
        case alone
        /// Take the decoding another reader did or is doing.
        case waiter(Slot)
        /// Decode it for everyone, into this slot.
        case decoder(Slot)
    }

    private struct Entry {
        var slot: Slot
        /// The events counted against ``capacity`` (0 while being decoded).
        var events: Int
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// The keys kept, by first sequence (frames come nearly always in order, so a new key
        /// goes at the end); those before ``head`` have left.
        var order: [(firstSequence: UInt64, key: Key)] = []
        var head = 0
        var events = 0
        var reportedDamage: Set<LogDamage> = []
        var damageOrder: [LogDamage] = []
        /// Figures for tests and benchmarks.
        var decoded = 0
        var shared = 0
        var written = 0

        /// Where a frame starting at `firstSequence` goes in ``order``.
        func insertionIndex(of firstSequence: UInt64) -> Int {
            var low = head
            var high = order.count
            while low < high {
                let middle = (low + high) / 2
                if order[middle].firstSequence <= firstSequence { low = middle + 1 } else { high = middle }
            }
            return low
        }
    }

    /// How many frames were decoded, how many reads were answered from a decoding by another reader
    /// or from the events as written, and how many frames the writer kept as written.
    package var figures: (decoded: Int, shared: Int, written: Int) {
        state.withLockedValue { ($0.decoded, $0.shared, $0.written) }
    }

    /// The events kept for a log several consumers read: some frames of a busy log's group commits,
    /// which consumers at the end of the log read within a commit or two of each other.
    package static let defaultCapacity = 4096

    /// A decoder keeping up to `capacity` decoded events (0: none, every reader decodes for
    /// itself, as for a log with one consumer), reporting damage to `logger`.
    package init(capacity: Int = defaultCapacity, logger: Logger) {
        self.capacity = max(0, capacity)
        self.logger = logger
    }

    /// The events of the frame at `offset` of the segment starting at `segment`, decoded by
    /// `decode` unless another reader decoded (or is decoding) the same frame.
    ///
    /// It may wait for another reader's decoding: call it, as every read of the log, from a
    /// thread made for blocking calls.
    func events(
        segment: UInt64, offset: Int64, header: FrameHeader, decode: () throws(FrameDecodingError) -> [Event]
    ) throws(FrameDecodingError) -> [Event] {
        guard capacity > 0 else { return try decode() }
        let key = Key(segment: segment, offset: offset, payloadCRC: header.payloadCRC)
        let role = state.withLockedValue { state -> Role in
            if let entry = state.entries[key] {
                state.shared += 1
                return .waiter(entry.slot)
            }
            state.decoded += 1
            // With the memory full, a frame older than every frame kept is read by a consumer that
            // fell behind: it decodes alone, rather than push out the frames the consumers at the
            // end of the log are about to read.
            if state.events >= capacity, state.head < state.order.count, header.firstSequence < state.order[state.head].firstSequence {
                return .alone
            }
            let slot = Slot()
            state.entries[key] = Entry(slot: slot, events: 0)
            state.order.insert((header.firstSequence, key), at: state.insertionIndex(of: header.firstSequence))
            return .decoder(slot)
        }
        let slot: Slot
        switch role {
        case .alone: return try decode()
        case .waiter(let decoding): return try decoding.wait().get()
        case .decoder(let kept): slot = kept
        }
        let result: Result<[Event], FrameDecodingError>
        do {
            result = .success(try decode())
        } catch {
            result = .failure(error)
        }
        // Fulfilled whatever happened, so no reader waiting for it can be left behind.
        slot.fulfil(result)
        account(key, slot: slot, events: (try? result.get().count) ?? 1)
        return try result.get()
    }

    /// Keeps the events of frames the log just wrote at `offset` of the segment starting at
    /// `segment` (``Frame/encodeGroup(_:firstSequence:compressionLevel:tallyingTenants:)``'s `frames`, holding the
    /// events of `groups` in order), as they were appended: a reader reaching those frames takes
    /// them without inflating and decoding them, exactly as it would have decoded them (the binary
    /// encoding gives back every event it encodes, field for field).
    ///
    /// Called by the writer after the frames' fdatasync, before the durable end moves past them.
    func keep(written frames: [Frame.Written], of groups: [[Event]], segment: UInt64, at offset: Int64) {
        guard capacity > 0 else { return }
        var groupIndex = 0
        var eventIndex = 0
        for frame in frames {
            let count = Int(frame.header.eventCount)
            var events: [Event] = []
            events.reserveCapacity(count)
            while events.count < count, groupIndex < groups.count {
                let group = groups[groupIndex]
                let take = min(group.count - eventIndex, count - events.count)
                events.append(contentsOf: group[eventIndex..<(eventIndex + take)])
                eventIndex += take
                if eventIndex == group.count {
                    groupIndex += 1
                    eventIndex = 0
                }
            }
            let key = Key(segment: segment, offset: offset + Int64(frame.byteOffset), payloadCRC: frame.header.payloadCRC)
            let slot = Slot()
            slot.fulfil(.success(events))
            let isNew = state.withLockedValue { state -> Bool in
                guard state.entries[key] == nil else { return false }
                state.entries[key] = Entry(slot: slot, events: 0)
                state.order.insert((frame.header.firstSequence, key), at: state.insertionIndex(of: frame.header.firstSequence))
                state.written += 1
                return true
            }
            if isNew { account(key, slot: slot, events: count) }
        }
    }

    /// Counts a kept frame against the capacity and lets the frames of the lowest sequence
    /// numbers go past it.
    private func account(_ key: Key, slot: Slot, events: Int) {
        state.withLockedValue { state in
            if var entry = state.entries[key], entry.slot === slot {
                entry.events = events
                state.entries[key] = entry
                state.events += events
            }
            while state.events > capacity, state.head < state.order.count {
                let oldest = state.order[state.head].key
                state.head += 1
                if let gone = state.entries.removeValue(forKey: oldest) { state.events -= gone.events }
            }
            if state.head > 64, state.head * 2 > state.order.count {
                state.order.removeFirst(state.head)
                state.head = 0
            }
        }
    }

    /// Logs `damage` unless a reader of the log already did: every consumer passes over the same
    /// damaged bytes, and one line says so for all of them.
    func report(_ damage: LogDamage) {
        guard damage.kind != .superseded else { return }
        let isNew = state.withLockedValue { state -> Bool in
            guard state.reportedDamage.insert(damage).inserted else { return false }
            state.damageOrder.append(damage)
            if state.damageOrder.count > Self.rememberedDamage {
                state.reportedDamage.remove(state.damageOrder.removeFirst())
            }
            return true
        }
        if isNew { Self.log(damage, to: logger) }
    }

    /// The one line that reports damaged bytes the log's readers pass over.
    static func log(_ damage: LogDamage, to logger: Logger) {
        logger.error("skipping damaged log bytes; their events cannot be counted or forwarded", metadata: ["damage": "\(damage)"])
    }

    /// One frame's decoding, which readers wait on while its first reader decodes it.
    private final class Slot: Sendable {
        private let ready = ConditionLock(value: false)
        private let outcome = NIOLockedValueBox<Result<[Event], FrameDecodingError>?>(nil)

        func fulfil(_ result: Result<[Event], FrameDecodingError>) {
            ready.lock()
            outcome.withLockedValue { $0 = result }
            ready.unlock(withValue: true)
        }

        func wait() -> Result<[Event], FrameDecodingError> {
            ready.lock(whenValue: true)
            defer { ready.unlock() }
            // Set before `ready` became true, under the same lock.
            return outcome.withLockedValue { $0 }
                ?? .failure(FrameDecodingError.events(EventBinaryCodec.DecodingError(offset: 0, reason: "frame decoding was lost")))
        }
    }
}
