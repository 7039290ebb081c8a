import RelayCore

extension CountDeltas {
    /// A first origin and the relay that handed its events to this one (`""` when they came
    /// straight from the origin).
    package struct OriginKey: Sendable, Hashable, Comparable {
        /// The relay that first logged the events.
        package var relayID: String
        /// The relay in between, or `""`.
        package var via: String

        /// The origin `relayID` through `via`.
        package init(relayID: String, via: String) {
            self.relayID = relayID
            self.via = via
        }

        package static func < (left: OriginKey, right: OriginKey) -> Bool { (left.relayID, left.via) < (right.relayID, right.via) }
    }

    /// What one origin's events add.
    package struct Origin: Sendable, Hashable {
        /// The origin.
        package var key: OriginKey
        /// Events, and of them tracking hits and registrations.
        package var events: Int64 = 0
        package var hits: Int64 = 0
        package var registrations: Int64 = 0
        /// The newest origin epoch seen, and the highest origin sequence seen in it.
        package var epoch: UInt32 = 0
        package var lastSequence: UInt64 = 0
        /// The earliest and latest event time, in nanoseconds since the Unix epoch.
        package var first = Int64.max
        package var last = Int64.min

        mutating func record(_ event: Event, at position: RelayPosition) {
            events += 1
            if case .tracking = event { hits += 1 } else { registrations += 1 }
            if position.epoch > epoch || (position.epoch == epoch && position.sequence > lastSequence) {
                epoch = position.epoch
                lastSequence = position.sequence
            }
            first = min(first, event.time.nanosecondsSinceEpoch)
            last = max(last, event.time.nanosecondsSinceEpoch)
        }
    }
}
