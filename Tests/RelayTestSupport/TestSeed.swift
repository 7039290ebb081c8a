import Foundation
import NIOConcurrencyHelpers
public import Testing

/// Seeds of randomized tests: from `CAMPAIGN_RELAY_TEST_SEED` when set (to repeat a failing run),
/// else random; printed when drawn, and added to every issue the test records when its suite has
/// ``Testing/Trait/seedInFailures``, so a failure names what replays it.
public enum TestSeed {
    /// The seeds each running test drew, by test id.
    private static let drawn = NIOLockedValueBox<[Test.ID: [String]]>([:])

    /// The seed for `test`, printed as `seed for TEST: N (CAMPAIGN_RELAY_TEST_SEED=N repeats it)`.
    public static func make(for test: String) -> UInt64 {
        let seed = ProcessInfo.processInfo.environment["CAMPAIGN_RELAY_TEST_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        let line = "seed for \(test): \(seed) (CAMPAIGN_RELAY_TEST_SEED=\(seed) repeats it)"
        print(line)
        if let id = Test.current?.id { drawn.withLockedValue { $0[id, default: []].append(line) } }
        return seed
    }

    /// What the current test drew, one line per seed.
    static func drawnByCurrentTest() -> [String] {
        guard let id = Test.current?.id else { return [] }
        return drawn.withLockedValue { $0[id] ?? [] }
    }
}

extension Trait where Self == IssueHandlingTrait {
    /// Adds the seeds a test drew (``TestSeed/make(for:)``) to every issue it records, so the
    /// failure itself says how to replay it. Every suite that draws a seed names it (a rule of
    /// `TestTierRuleTests`).
    public static var seedInFailures: Self {
        .compactMapIssues { issue in
            // The trait applies to the suite and to each of its tests: an issue may pass twice.
            let seeds = TestSeed.drawnByCurrentTest().filter { line in !issue.comments.contains { $0.rawValue == line } }
            guard !seeds.isEmpty else { return issue }
            var issue = issue
            issue.comments += seeds.map { Comment(rawValue: $0) }
            return issue
        }
    }
}
