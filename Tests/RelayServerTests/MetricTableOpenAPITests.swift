import Foundation
import RelayAggregates
import TestTiers
import Testing

/// `docs/openapi.yaml` stays written by hand, but its `DeliveryCounts` and `RegistrationCounts`
/// schemas list exactly the metrics of the standard table (``MetricTable/standard``), each a
/// required integer property: a metric added to the table without its line in the spec fails here.
@Suite("OpenAPI's counts schemas list the metric table", .tier(.fast))
struct MetricTableOpenAPITests {
    static let specification = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/openapi.yaml")

    /// The property names of the schema `name` in `lines`, in order, and its `required` list.
    static func schema(_ name: String, in lines: [Substring]) throws -> (properties: [String], required: [String]) {
        let start = try #require(lines.firstIndex(of: "    \(name):"[...]), "no schema \(name)")
        var properties: [String] = []
        var required: [String] = []
        var inProperties = false
        for line in lines[(start + 1)...] {
            let indent = line.prefix { $0 == " " }.count
            if indent <= 4 { break }
            if indent == 6 {
                inProperties = line.hasPrefix("      properties:")
                if line.hasPrefix("      required: [") {
                    required = line.dropFirst("      required: [".count).dropLast().split(separator: ",").map {
                        $0.trimmingCharacters(in: .whitespaces)
                    }
                }
            } else if inProperties, indent == 8, let colon = line.firstIndex(of: ":") {
                properties.append(String(line[line.index(line.startIndex, offsetBy: 8)..<colon]))
            }
        }
        return (properties, required)
    }

    @Test(
        "DeliveryCounts and RegistrationCounts: their integer properties, and the required ones, are the per-delivery and per-app metrics of the table, in its order"
    )
    func countsSchemasFollowTheTable() throws {
        let lines = try String(contentsOf: Self.specification, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        let deliveries = try Self.schema("DeliveryCounts", in: lines)
        let deliveryFields = ["tenant", "deliveryId", "firstEvent", "lastEvent"]
        let deliveryMetrics = MetricTable.standard.perDelivery.map(\.name)
        #expect(deliveries.properties.filter { !deliveryFields.contains($0) } == deliveryMetrics)
        #expect(deliveries.required.filter { !deliveryFields.contains($0) } == deliveryMetrics)
        let registrations = try Self.schema("RegistrationCounts", in: lines)
        let appFields = ["tenant", "integrationKey", "platform", "firstEvent", "lastEvent"]
        let appMetrics = MetricTable.standard.perApp.map(\.name)
        #expect(registrations.properties.filter { !appFields.contains($0) } == appMetrics)
        #expect(registrations.required.filter { !appFields.contains($0) } == appMetrics)
    }
}
