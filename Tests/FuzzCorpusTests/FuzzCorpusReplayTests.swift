import Foundation
import RelayFuzzTargets
import TestTiers
import Testing

/// Replays every committed fuzz input (`Fuzz/Corpus/<target>/`, the minimized corpus of the last
/// campaign, and `Fuzz/Regressions/<target>/`, every input that once broke a target) through its
/// target, so each change is checked against what the fuzzer found. `Fuzz/fuzz.sh` runs the
/// campaigns themselves.
@Suite("Fuzz corpus replay", .tier(.fast))
struct FuzzCorpusReplayTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")
    static let corpusDirectory = fuzzDirectory.appendingPathComponent("Corpus")
    static let regressionsDirectory = fuzzDirectory.appendingPathComponent("Regressions")

    /// The findings kept for each target (their causes fixed), by file name.
    static let expectedRegressions: [FuzzTarget: Set<String>] = [
        .eventCodec: ["finding-228c726d1a87", "finding-06b11ddb43d8"],
        .retryAfter: ["finding-2d1770ac0d14"],
        .sdkForm: ["finding-2eb9e3f80707", "finding-1b5acea31b1f"],
    ]

    /// Fewer inputs than this means the corpus went missing, not that it was minimized.
    static let minimumInputs = 5

    @Test("every seed holds the target's properties", arguments: FuzzTarget.allCases)
    func seeds(target: FuzzTarget) throws {
        let seeds = FuzzSeeds.inputs(for: target)
        #expect(seeds.count >= 3)
        for (index, seed) in seeds.enumerated() {
            #expect(throws: Never.self, "seed \(index)") { try target.run(seed) }
        }
    }

    @Test("every committed input holds the target's properties", arguments: FuzzTarget.allCases)
    func replay(target: FuzzTarget) throws {
        let directory = Self.corpusDirectory.appendingPathComponent(target.rawValue)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(names.count >= Self.minimumInputs, "\(directory.path) holds \(names.count) inputs")
        var findings: [String] = []
        for name in names {
            let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
            do {
                try target.run(bytes)
            } catch {
                findings.append("\(name): \(error.property)")
            }
        }
        #expect(
            findings.isEmpty, "\(findings.count) of \(names.count) inputs break \(target.rawValue):\n\(findings.prefix(10).joined(separator: "\n"))")
    }

    @Test("every past finding is kept and holds the target's properties now", arguments: FuzzTarget.allCases)
    func regressions(target: FuzzTarget) throws {
        let directory = Self.regressionsDirectory.appendingPathComponent(target.rawValue)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        #expect(Set(names) == Self.expectedRegressions[target, default: []], "the findings kept in \(directory.path)")
        for name in names.sorted() {
            let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
            #expect(throws: Never.self, "\(target.rawValue) \(name)") { try target.run(bytes) }
        }
    }
}
