import Foundation
import NIOConcurrencyHelpers
import Testing

/// What is left of the running test's time limit, for its hang guards: a wait that would run past
/// the limit is cut short a little before it, so that a slow run fails at the step that was slow,
/// naming what it waited for, and not with Swift Testing's bare "time limit exceeded".
///
/// A test's own guards may add up to more than its suite's `.timeLimit` (five runs of the binary
/// of 300 s each, in a suite of 10 minutes): each guard stays what the test asked for while the
/// budget allows it. The clock starts at the test's first guarded wait, which comes within
/// seconds of its start; ``margin`` covers that, and the time the test needs to report.
public enum TestBudget {
    /// What a test keeps of its time limit to report its failure.
    public static let margin = 20.0

    /// When each running test made its first guarded wait, by test id.
    private static let started = NIOLockedValueBox<[Test.ID: Date]>([:])

    /// The seconds a wait that asked for `requested` may take: `requested`, or less when the
    /// running test's time limit would run out first (never below zero). Outside a test, or in a
    /// test with no time limit, `requested`.
    public static func seconds(_ requested: Double) -> Double {
        guard let test = Test.current, let limit = test.timeLimit else { return requested }
        let now = Date()
        let start = started.withLockedValue { started in
            if let start = started[test.id] { return start }
            started[test.id] = now
            return now
        }
        let limitSeconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
        let left = limitSeconds - margin - now.timeIntervalSince(start)
        return max(0, min(requested, left))
    }

    /// Why a guard of `requested` seconds waited only `granted`: for its failure message.
    public static func note(requested: Double, granted: Double) -> String {
        granted < requested ? " (cut from \(requested) s: the test's time limit was running out)" : ""
    }
}
