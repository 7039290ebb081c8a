import Foundation
import TestTiers
import Testing

/// The one rule of the test tiers, checked in the source: every suite names exactly one tier, once,
/// in the `@Suite` attribute of its outermost type. A suite in neither tier would never run in CI,
/// and one in both would run twice; either fails here, naming the file and the type.
@Suite("Test tiers", .tier(.fast))
struct TestTierRuleTests {
    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    /// A type declared at the top level of a test file (`struct X`, `extension X`, …), with the
    /// attributes written on the lines before it and the lines of its body.
    struct TopLevelDeclaration {
        var file: String
        var line: Int
        var name: String
        /// `struct`, `class`, `enum`, `actor`, `extension` or `func`.
        var kind: String
        var isExtension: Bool { kind == "extension" }
        var attributes: String
        var body: [String]
    }

    /// Every top-level declaration under `Tests/`. swift-format's indentation is what delimits
    /// them: a declaration starts at column 0 and its body runs to the next line at column 0.
    static func declarations() throws -> [TopLevelDeclaration] {
        guard let walker = FileManager.default.enumerator(at: testsDirectory, includingPropertiesForKeys: nil) else { return [] }
        let opener = try Regex(#"^(?:public |package |final |private |fileprivate )*(struct|class|enum|actor|extension|func) ([A-Za-z0-9_.]+)"#)
        var found: [TopLevelDeclaration] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let file = String(url.path.dropFirst(testsDirectory.deletingLastPathComponent().path.count + 1))
            let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            var attributes: [String] = []
            var current: TopLevelDeclaration?
            for (index, line) in lines.enumerated() {
                let atColumnZero = !(line.first?.isWhitespace ?? true)
                guard atColumnZero else {
                    // Comments are not code: a doc comment may well mention `@Test`.
                    if line.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }
                    if current != nil { current?.body.append(line) } else if !attributes.isEmpty { attributes.append(line) }
                    continue
                }
                if let match = line.firstMatch(of: opener) {
                    if let done = current { found.append(done) }
                    current = TopLevelDeclaration(
                        file: file, line: index + 1, name: String(match.output[2].substring ?? ""),
                        kind: String(match.output[1].substring ?? ""), attributes: attributes.joined(separator: "\n"), body: [])
                    attributes = []
                } else if line.hasPrefix("@") {
                    // An attribute of the next declaration; a `}` or anything else at column 0 ends the current one.
                    if let done = current { found.append(done) }
                    current = nil
                    attributes.append(line)
                } else if line.hasPrefix(")") && !attributes.isEmpty {
                    attributes.append(line)
                } else {
                    if let done = current { found.append(done) }
                    current = nil
                    attributes = []
                }
            }
            if let done = current { found.append(done) }
        }
        return found
    }

    static let tierTrait = ".tier" + "("

    @Test("every suite names exactly one tier, in the @Suite attribute of its outermost type")
    func everySuiteInExactlyOneTier() throws {
        let declarations = try Self.declarations()
        #expect(declarations.count > 100, "the walk should find the test files")
        // A type's tests may sit in its declaration or in extensions of it, in any file.
        let suites = Set(declarations.filter { $0.body.contains { $0.contains("@Test") } }.map(\.name))
        var tiers: [String: [TestTier]] = [:]
        for suite in suites.sorted() {
            let attributes = declarations.filter { $0.name == suite && !$0.isExtension }.map(\.attributes).joined(separator: "\n")
            let named = TestTier.allCases.flatMap { tier in
                Array(repeating: tier, count: attributes.ranges(of: "\(Self.tierTrait).\(tier))").count)
            }
            tiers[suite] = named
            let place = declarations.first { $0.name == suite }.map { "\($0.file):\($0.line)" } ?? "?"
            #expect(
                named.count == 1,
                "\(place) suite \(suite) names \(named.isEmpty ? "no tier" : "the tiers \(named)"): put .tier(.fast) or .tier(.thorough) in its @Suite"
            )
        }
        let fast = tiers.values.filter { $0 == [.fast] }.count
        let thorough = tiers.values.filter { $0 == [.thorough] }.count
        print("test tiers: \(fast) suites fast, \(thorough) thorough, \(suites.count) in all")
        #expect(fast > 0 && thorough > 0)
    }

    @Test("a tier is named on suites only: never on a @Test, a nested type or an extension")
    func tiersOnlyOnOutermostSuites() throws {
        for declaration in try Self.declarations() {
            let inBody = declaration.body.enumerated().filter { $0.element.contains(Self.tierTrait) }
            for (offset, text) in inBody where declaration.name != "TestTierRuleTests" {
                Issue.record("\(declaration.file):\(declaration.line + offset + 1) names a tier inside \(declaration.name): \(text)")
            }
            if declaration.isExtension && declaration.attributes.contains(Self.tierTrait) {
                Issue.record("\(declaration.file):\(declaration.line) names a tier on an extension of \(declaration.name)")
            }
        }
    }

    @Test("a test outside any type would belong to no tier: every @Test is inside a suite")
    func noFreeTests() throws {
        for declaration in try Self.declarations() where declaration.kind == "func" && declaration.attributes.contains("@Test") {
            Issue.record("\(declaration.file):\(declaration.line) \(declaration.name) is a free @Test function: put it in a suite with a tier")
        }
    }

    @Test("CAMPAIGN_RELAY_TIER selects fast by default, thorough, or all; anything else is refused by name")
    func selection() throws {
        #expect(try TestTier.selected(environment: [:]) == [.fast])
        #expect(try TestTier.selected(environment: [TestTier.variable: "thorough"]) == [.thorough])
        #expect(try TestTier.selected(environment: [TestTier.variable: "ALL"]) == [.fast, .thorough])
        #expect(throws: TestTier.UnknownTier.self) { try TestTier.selected(environment: [TestTier.variable: "thorougn"]) }
    }
}
