import CampaignProtocol
import NIOConcurrencyHelpers
import RelayCore

/// The `Date` header of the answers ``TrackingHitHandler`` writes itself, as Hummingbird puts it on
/// the router's: made at most once a second, shared by every connection.
final class HTTPDateHeader: Sendable {
    private let cached = NIOLockedValueBox<(second: Int64, text: String)>((-1, ""))

    /// The header's value for the current second.
    var now: String {
        let second = SystemClock.wallNanoseconds() / 1_000_000_000
        return cached.withLockedValue { cache in
            if cache.second != second { cache = (second, HTTPDate.text(secondsSinceEpoch: second)) }
            return cache.text
        }
    }
}
