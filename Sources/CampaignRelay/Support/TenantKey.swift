import RelayServer
import TOMLKit

/// One key of a `[tenant.NAME]` table of a configuration file: its name, what it means, and how
/// its value is read, checked and shown. The keys are declared once, in ``all`` (`TenantKey+Keys.swift`),
/// and everything else comes from there: ``TenantTable`` reads a tenant's table with them,
/// `config check` shows each tenant by them, ``ConfigurationKeys`` lists them with the options,
/// and `docs/configuration.md`'s table of tenant keys is generated from them.
///
/// A key of a tenant takes effect on SIGHUP (``ConfigurationKey/Reload/sighup``): a reload reads
/// every tenant again and `TenantReconciler` applies each one whole.
struct TenantKey: Sendable {
    /// A value as JSON, as `config check --json` prints it.
    enum JSONValue: Sendable, Hashable, Encodable {
        case string(String)
        case integer(Int64)
        case strings([String])

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let text): try container.encode(text)
            case .integer(let number): try container.encode(number)
            case .strings(let texts): try container.encode(texts)
            }
        }
    }

    /// A value as `config check` shows it.
    struct Shown: Sendable, Hashable {
        /// As the text output writes it (`"https://t.example"` unquoted, a list in brackets,
        /// `(hidden)` for a secret); `nil`: shown as `(unset)` (an empty list).
        var text: String?
        /// As `--json` writes it.
        var json: JSONValue
    }

    /// Reads one value: checks it and sets it in the tenant's configuration.
    ///
    /// `place` is `FILE:LINE: KEY of [tenant.NAME]`, the start of every message it throws.
    typealias Read =
        @Sendable (_ value: any TOMLValueConvertible, _ place: String, _ tenant: inout TenantConfiguration) throws(ConfigurationFile.Failure) -> Shown

    /// The key as a file writes it (`tracking-host`).
    let name: String
    /// What it means, as `docs/configuration.md` says it (Markdown).
    let help: String
    /// Its name in `config check --json`'s tenants (`trackingHost`).
    let jsonName: String
    /// What `--json` prints for a tenant that does not set it; `nil`: nothing.
    let unsetJSON: JSONValue?
    /// Reads, checks and sets a value.
    let read: Read

    /// The key `name`, meaning `help`, read by `read`; `jsonName` defaults to the name in camel case.
    init(_ name: String, help: String, jsonName: String? = nil, unsetJSON: JSONValue? = nil, read: @escaping Read) {
        self.name = name
        self.help = help
        self.jsonName = jsonName ?? Self.camelCase(name)
        self.unsetJSON = unsetJSON
        self.read = read
    }

    /// `tracking-host` as `trackingHost`.
    private static func camelCase(_ name: String) -> String {
        let words = name.split(separator: "-")
        return words.prefix(1).joined() + words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }
}
