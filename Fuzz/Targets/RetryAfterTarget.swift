import CampaignProtocol

/// `Retry-After` as a Campaign host (or a proxy before it) may send it: a delay is never negative
/// and never above ``RetryAfter/maximum``, and a date it reads lies in 1970...9999.
enum RetryAfterTarget {
    /// 2026-11-22T00:00:00Z, so that dates around now give delays of both signs.
    static let now = 1_795_305_600.0

    static func run(_ bytes: [UInt8]) throws(FuzzFinding) {
        let text = String(decoding: bytes, as: UTF8.self)
        if let delay = RetryAfter.delay(text, now: now) {
            try require(delay >= .zero && delay <= RetryAfter.maximum, .retryAfter, "\(text.debugDescription) gives \(delay)")
        }
        if let date = RetryAfter.parseHTTPDate(text) {
            try require(
                date >= 0 && date < 253_402_300_800, .retryAfter, "\(text.debugDescription) is read as \(date) s after 1970")
        }
    }
}
