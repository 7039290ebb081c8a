import Foundation

/// The two tiers of the test suite, and which of them a run selected.
///
/// Every suite belongs to exactly one tier, named once in its `@Suite` attribute with
/// `.tier(.fast)` or `.tier(.thorough)` (``Testing/Trait/tier(_:sourceLocation:)``);
/// `TestTierRuleTests` fails the run when a suite names none, or more than one.
///
/// - ``fast``: what a contributor runs after a change (`swift test`, minutes): every unit and
///   in-process test, the crash simulations at reduced seed counts, the cheap real-process tests.
/// - ``thorough``: what needs real crashes, faults, clusters, floods, browsers or many seeds
///   (`Tests/thorough.sh`): kill -9 loops, libfiu, network namespaces, socket floods, PostgreSQL,
///   schemathesis, Chromium, full disks, and the rest of the crash simulations' seeds.
///
/// `CAMPAIGN_RELAY_TIER` selects: `fast` (the default), `thorough`, or `all`. CI runs both tiers.
public enum TestTier: String, Sendable, CaseIterable, CustomStringConvertible {
    case fast
    case thorough

    /// The variable that selects the tiers of a run.
    public static let variable = "CAMPAIGN_RELAY_TIER"

    /// A value of ``variable`` that is not a tier.
    public struct UnknownTier: Error, CustomStringConvertible {
        /// The value as the environment gave it.
        public var value: String
        public var description: String {
            "\(TestTier.variable)=\(value) names no tier: use fast (the default), thorough or all"
        }
    }

    /// The tiers this run selected, from ``variable`` in `environment` (the process's when nil);
    /// throws ``UnknownTier`` for a value that names none, so a typo fails every suite instead of
    /// silently running none.
    public static func selected(environment: [String: String]? = nil) throws(UnknownTier) -> Set<TestTier> {
        switch (environment ?? ProcessInfo.processInfo.environment)[variable]?.lowercased() {
        case nil, "", "fast": [.fast]
        case "thorough": [.thorough]
        case "all": Set(allCases)
        case let other?: throw UnknownTier(value: other)
        }
    }

    public var description: String { rawValue }

    /// What a skipped suite of this tier prints: how to run it.
    var howToRun: String {
        switch self {
        case .fast: "fast tier: swift test runs it"
        case .thorough: "thorough tier: Tests/thorough.sh runs it (or \(Self.variable)=thorough swift test --filter NAME)"
        }
    }
}
