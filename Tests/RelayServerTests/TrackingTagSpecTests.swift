import Foundation
import RelayCore
import RelayForwarding
import RelayProcessTestSupport
import RelayServer
import TestTiers
import Testing

/// The tags of a tracking hit as docs/openapi.yaml describes them (both `/r/` operations) against
/// what the route does: each tag the description maps to an action is taken and stored as that
/// action, and every other tag is refused with 400 (docs/campaign-protocol.md, "Tracking").
@Suite("docs/openapi.yaml's tracking tags are the route's", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct TrackingTagSpecTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let specification = root.appendingPathComponent("docs/openapi.yaml").path

    /// The description of the `id` parameter of `path`'s operation, read from the document's text
    /// (a block scalar's lines joined by spaces); `nil` when the document has none.
    static func idDescription(of path: String, in spec: String) -> String? {
        let lines = spec.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(of: "  \(path):") else { return nil }
        // The path's block: every line indented deeper than its key.
        let block = lines[(start + 1)...].prefix { $0.isEmpty || $0.hasPrefix("   ") }
        guard let name = block.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "- name: id" }),
            let key = block[name...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces).hasPrefix("description:") })
        else { return nil }
        let indent = block[key].prefix { $0 == " " }.count
        var text = [String(block[key].trimmingCharacters(in: .whitespaces).dropFirst("description:".count)).trimmingCharacters(in: .whitespaces)]
        for line in block[(key + 1)...] {
            guard line.prefix(while: { $0 == " " }).count > indent else { break }
            text.append(line.trimmingCharacters(in: .whitespaces))
        }
        return text.filter { $0 != "|" }.joined(separator: " ")
    }

    /// The tag → action pairs a description states (`` `1` impression``, or `1 impression`).
    static func mapping(in description: String) -> [String: String] {
        var pairs: [String: String] = [:]
        for match in description.matches(of: /`?(\d+)`? (impression|open|click)\b/) { pairs[String(match.output.1)] = String(match.output.2) }
        return pairs
    }

    @Test("for /r/ and /{tenant}/r/: the tags the spec maps are stored as its actions, every other tag gets 400, and the spec says so")
    func specMatchesRoute() async throws {
        let spec = try String(contentsOfFile: Self.specification, encoding: .utf8)
        let brandA = try TenantName(validating: "brand-a")
        let server = try await RunningServer.start { configuration in
            configuration.aggregates = false
            configuration.tenants = [TenantConfiguration(destinations: TenantDestinations(tenant: brandA, trackingHost: nil, marketingHost: nil))]
        }
        let http = TestHTTPClient()
        let tags = (0...9).map(String.init) + ["10", "01", "-1"]
        var expectedActions: [String: String] = [:]
        var number = 0x100
        for (operation, prefix) in [("/r/", ""), ("/{tenant}/r/", "/brand-a")] {
            let description = try #require(Self.idDescription(of: operation, in: spec), "no id description for \(operation)")
            let stated = Self.mapping(in: description)
            #expect(stated == ["1": "impression", "2": "open"], "\(operation): the spec says \(stated) in: \(description)")
            #expect(description.contains("Any other tag is refused with 400"), "\(operation): \(description)")
            for tag in tags {
                number += 1
                let messageId = "h" + String(number, radix: 16)
                let answer = try await http.get(server.url + prefix + "/r/?id=\(messageId),tagspec,\(tag)")
                if let action = stated[tag] {
                    #expect(answer.status == 200, "\(operation) tag \(tag): \(answer.status) \(answer.body)")
                    expectedActions[messageId] = action
                } else {
                    #expect(answer.status == 400, "\(operation) tag \(tag) is not in the spec, yet: \(answer.status)")
                    #expect(answer.body == "tag \"\(tag)\" is not 1 (received) or 2 (opened)\n", "\(operation) tag \(tag): \(answer.body)")
                }
            }
        }
        await http.shutdown()
        await server.stop()
        // What the route stored for each hit it took: the spec's action.
        var storedActions: [String: String] = [:]
        for logged in try RelayChainTests.logged(server.dataDirectory) {
            guard case .tracking(let hit) = logged.event else { continue }
            storedActions["\(hit.messageId)"] = hit.action.rawValue
        }
        #expect(storedActions == expectedActions)
        #expect(storedActions.count == 4)
    }
}
