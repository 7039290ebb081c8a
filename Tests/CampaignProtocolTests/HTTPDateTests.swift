import CampaignProtocol
import TestTiers
import Testing

/// `HTTPDate`: IMF-fixdates as Python's `email.utils.formatdate(t, usegmt=True)` writes them, and as
/// `RetryAfter` reads them back.
@Suite(.tier(.fast))
struct HTTPDateTests {
    @Test(
        "IMF-fixdates of known seconds",
        arguments: [
            (Int64(0), "Thu, 01 Jan 1970 00:00:00 GMT"), (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"), (1_795_500_588, "Tue, 24 Nov 2026 06:09:48 GMT"),
            (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
        ])
    func knownSeconds(seconds: Int64, text: String) {
        #expect(HTTPDate.text(secondsSinceEpoch: seconds) == text)
    }

    @Test("a date written here is read back by RetryAfter as the same second")
    func readBack() {
        let now = 1_795_500_000.0
        let written = HTTPDate.text(secondsSinceEpoch: 1_795_500_588)
        #expect(RetryAfter.delay(written, now: now) == .seconds(588))
    }
}
