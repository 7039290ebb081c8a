import TestTiers
import Testing

@testable import RelayCore

/// `TenantName`: the rules of a tenant's name, which is a path segment, a table name and part of
/// each of its events in the log.
@Suite(.tier(.fast))
struct TenantNameTests {
    @Test(
        "names of 1 to 63 lowercase letters, digits and '-' are taken",
        arguments: ["a", "brand-a", "0", "-", "eu-west-1", String(repeating: "z", count: 63)])
    func valid(name: String) throws {
        #expect(try TenantName(validating: name).text == name)
        #expect(TenantName.ruleBroken(by: name) == nil)
    }

    @Test(
        "other names are refused with the rule they break",
        arguments: [
            ("", "must be 1 to 63 characters long"), (String(repeating: "z", count: 64), "must be 1 to 63 characters long"),
            ("Brand", "may hold only lowercase letters a-z, digits and '-'"), ("brand_a", "may hold only lowercase letters a-z, digits and '-'"),
            ("brand.a", "may hold only lowercase letters a-z, digits and '-'"), ("é", "may hold only lowercase letters a-z, digits and '-'"),
            ("a/b", "may hold only lowercase letters a-z, digits and '-'"),
        ])
    func invalid(name: String, rule: String) {
        #expect(TenantName.ruleBroken(by: name) == rule)
        #expect(throws: EventInputError(field: "tenant", "tenant \(name.quotedForMessage) \(rule)")) { try TenantName(validating: name) }
    }

    @Test("the default tenant's name and the first segments of the relay's own routes are reserved")
    func reserved() throws {
        for name in ["default", "r", "nms", "v1", "status", "metrics", "healthz", "readyz"] {
            #expect(TenantName.ruleBroken(by: name)?.hasPrefix("is reserved") == true, "\(name)")
        }
        #expect(Optional<TenantName>.none.displayName == "default")
        #expect(Optional(try TenantName(validating: "v2")).displayName == "v2")
    }
}
