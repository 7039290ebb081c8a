import RelayCore
import TestTiers
import Testing

/// `Duration.humanText`: durations in log lines and messages, written as the duration options
/// are (`250ms`, `1.66s`, `2m5s`, `1h30m`, `3d4h`), never as `1.660393325 seconds`.
@Suite("Durations for people", .tier(.fast))
struct DurationHumanTextTests {
    @Test(arguments: [
        (Duration.zero, "0s"),
        (.nanoseconds(400), "0ms"),
        (.nanoseconds(412_000), "0.412ms"),
        (.nanoseconds(50_000), "0.05ms"),
        (.nanoseconds(999_600), "1ms"),
        (.nanoseconds(1_660_000), "1.66ms"),
        (.milliseconds(250), "250ms"),
        (.nanoseconds(999_600_000), "1s"),
        // The log line of issue #38: `was-down-for=1.660393325 seconds`.
        (.nanoseconds(1_660_393_325), "1.66s"),
        (.milliseconds(12_345), "12.3s"),
        (.seconds(45), "45s"),
        (.milliseconds(59_960), "1m"),
        (.seconds(125), "2m5s"),
        (.milliseconds(3_599_600), "1h"),
        (.seconds(5400), "1h30m"),
        (.seconds(86_399), "1d"),
        (.seconds(90_000), "1d1h"),
        (.seconds(7 * 86_400), "7d"),
        (.milliseconds(-1500), "-1.5s"),
        (.seconds(Int64.max), "106752d"),
    ])
    func humanText(duration: Duration, text: String) {
        #expect(duration.humanText == text)
    }
}
