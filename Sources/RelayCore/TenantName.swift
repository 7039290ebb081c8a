/// The name of a tenant: one app or Campaign instance served by a relay shared with others, with its
/// own upstream hosts, integration keys, quota and counts.
///
/// It is the first path segment of everything an SDK or a backend sends for it
/// (`/brand-a/r/?id=…`), a `[tenant.brand-a]` table of the configuration file, and part of each of
/// its events in the log (`docs/wal-format.md`, tag 7). A name is 1 to 63 lowercase ASCII letters,
/// digits and `-`, and is none of ``reservedNames``.
///
/// Events without a tenant belong to the *default tenant*, the hosts of the relay's own options; it
/// has no `TenantName` and is written `default` where a name must be shown.
public struct TenantName: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The name's text, e.g. `brand-a`.
    public let text: String

    /// The longest name, in bytes: a DNS label's limit, so a name also fits a host name.
    public static let maximumLength = 63

    /// Names no tenant may take: `default` names the default tenant, and the others are the first
    /// path segments of the relay's own routes (`/r/`, `/nms/…`, `/v1/…`, `/status`, `/metrics`,
    /// `/healthz`, `/readyz`), which a tenant prefix must never shadow.
    public static let reservedNames: Set<String> = ["default", "r", "nms", "v1", "status", "metrics", "healthz", "readyz"]

    /// How the default tenant is shown where a name is expected (metrics, `--tenant`, JSON output).
    public static let defaultTenantText = "default"

    /// Validates `text` as a tenant name.
    ///
    /// - Throws: ``EventInputError`` with `field` saying which rule the text breaks.
    public init(validating text: String, field: String = "tenant") throws(EventInputError) {
        if let rule = Self.ruleBroken(by: text) {
            throw EventInputError(field: field, "\(field) \(text.quotedForMessage) \(rule)")
        }
        self.text = text
    }

    /// Why `text` is not a tenant name, as a sentence fragment; `nil` when it is one.
    public static func ruleBroken(by text: String) -> String? {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maximumLength else {
            return "must be 1 to \(maximumLength) characters long"
        }
        guard bytes.allSatisfy(Self.isNameByte) else {
            return "may hold only lowercase letters a-z, digits and '-'"
        }
        guard !reservedNames.contains(text) else {
            return "is reserved (the default tenant, or the first path segment of one of the relay's own routes)"
        }
        return nil
    }

    /// Whether `byte` may appear in a tenant name.
    @inline(__always)
    public static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || byte == UInt8(ascii: "-")
    }

    public var description: String { text }

    public static func < (left: TenantName, right: TenantName) -> Bool { left.text < right.text }
}

extension Optional where Wrapped == TenantName {
    /// The tenant's name, or `default` for the default tenant: how metrics, `--json` output and
    /// `--tenant` show it.
    public var displayName: String { self?.text ?? TenantName.defaultTenantText }

    /// The tenant's name as the aggregates, the dead letters and the deduplication state store it:
    /// `''` for the default tenant (``TenantName/displayName(stored:)`` reads it back).
    public var storedName: String { self?.text ?? "" }
}

/// Which tenants a report or a listing covers: all of them, or one (the default tenant included).
public enum TenantSelection: Sendable, Hashable {
    /// Every tenant, each row naming its own.
    case all
    /// One tenant; `nil` is the default tenant.
    case only(TenantName?)

    /// Reads `--tenant NAME` or a path's tenant: `default` is the default tenant, any other text
    /// must be a ``TenantName``.
    ///
    /// - Throws: ``EventInputError`` naming the rule the text breaks.
    public init(parsing text: String) throws(EventInputError) {
        self = text == TenantName.defaultTenantText ? .only(nil) : .only(try TenantName(validating: text))
    }

    /// The name as both aggregate schemas store it (`""` for the default tenant); `nil` for ``all``.
    public var storedName: String? {
        switch self {
        case .all: nil
        case .only(let tenant): tenant.storedName
        }
    }
}

extension TenantName {
    /// How a stored tenant column (`""` for the default tenant) is shown: its name, or `default`.
    public static func displayName(stored: String) -> String { stored.isEmpty ? defaultTenantText : stored }
}
