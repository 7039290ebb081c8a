import Foundation
import RelayTestSupport
import TestTiers
import Testing

/// Every random choice in a test is seeded, and a failure says how to repeat it: checked in the
/// source, as the tier rule is (`TestTierRuleTests`).
@Suite("Seeded randomness in the tests", .tier(.fast), .seedInFailures)
struct SeededRandomnessRuleTests {
    /// Files that draw from the system's generator, and what for: nothing a test's outcome depends on.
    static let unseededDraws: [String: String] = [
        "RelayTestSupport/TestSeed.swift": "the seed itself, when CAMPAIGN_RELAY_TEST_SEED does not give one",
        "RelayTestSupport/TestDirectories.swift": "unique names of scratch directories",
        "RelayTestSupport/TestPostgres.swift": "unique names of a cluster's directory and output file",
    ]

    @Test("no test draws from the system's generator: every .random, shuffle and randomElement takes a seeded generator")
    func everyDrawIsSeeded() throws {
        let unseeded = #/\.random\(|\.shuffled\(\)|\.shuffle\(\)|\.randomElement\(\)|SystemRandomNumberGenerator/#
        for declaration in try TestTierRuleTests.declarations() where declaration.name != "SeededRandomnessRuleTests" {
            let file = String(declaration.file.dropFirst("Tests/".count))
            for (offset, line) in declaration.body.enumerated() where line.contains(unseeded) && !line.contains("using:") {
                if Self.unseededDraws[file] != nil { continue }
                Issue.record(
                    "\(declaration.file) in \(declaration.name), line \(declaration.line + offset + 1): an unseeded draw: \(line.trimmingCharacters(in: .whitespaces)); draw from a SeededGenerator seeded by TestSeed.make(for:)"
                )
            }
        }
    }

    @Test("a suite that draws a seed adds it to its failures (.seedInFailures)")
    func seedsInFailures() throws {
        let declarations = try TestTierRuleTests.declarations()
        let drawing = Set(declarations.filter { $0.body.contains { $0.contains("TestSeed.make(") } }.map(\.name))
        #expect(!drawing.isEmpty)
        for suite in drawing.sorted() where suite != "TestSeed" {
            let attributes = declarations.filter { $0.name == suite && !$0.isExtension }.map(\.attributes).joined()
            let place = declarations.first { $0.name == suite }.map { "\($0.file):\($0.line)" } ?? "?"
            #expect(attributes.contains(".seedInFailures"), "\(place) \(suite) draws a seed: add .seedInFailures to its @Suite")
        }
    }

    @Test("an issue a test records carries the seeds it drew, once")
    func issuesCarryTheSeed() {
        let seed = TestSeed.make(for: "the seed in failures")
        // An issue recorded as known does not fail the test; the trait is then asked what it
        // makes of it, as the test's own issue handling asks it of every issue.
        var recorded: Issue?
        withKnownIssue { recorded = Issue.record("a failure") }
        let trait: IssueHandlingTrait = .seedInFailures
        let handled = recorded.flatMap { trait.handleIssue($0) }
        let seedLines = handled?.comments.filter { $0.rawValue.contains("CAMPAIGN_RELAY_TEST_SEED=\(seed)") }
        #expect(seedLines?.count == 1, "\(handled.map { "\($0.comments)" } ?? "no issue")")
    }
}
