import Foundation

/// Seeds of randomized tests: from `CAMPAIGN_RELAY_TEST_SEED` when set (to repeat a failing run),
/// else random; printed either way, so every failure can be replayed.
public enum TestSeed {
    /// The seed for `test`, printed as `seed for TEST: N (CAMPAIGN_RELAY_TEST_SEED=N repeats it)`.
    public static func make(for test: String) -> UInt64 {
        let seed = ProcessInfo.processInfo.environment["CAMPAIGN_RELAY_TEST_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        print("seed for \(test): \(seed) (CAMPAIGN_RELAY_TEST_SEED=\(seed) repeats it)")
        return seed
    }
}
