import RelayCore

/// A Campaign host (marketing or tracking) as the relay calls it: scheme, host, optional port and
/// optional path prefix. `trackserver` means `https://trackserver`; `http://` is accepted for
/// tests and local hosts.
public struct CampaignHost: Sendable, Hashable, CustomStringConvertible {
    /// Why a host setting was refused.
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        /// What is wrong, naming the setting.
        public var description: String
    }

    /// `https` or `http`.
    public var scheme: String
    /// The host name or address (an IPv6 address without brackets).
    public var host: String
    /// The port, when not the scheme's default.
    public var port: Int?
    /// A path every request path is appended to, without a trailing slash (often empty).
    public var pathPrefix: String

    /// Parses a host setting such as `trackserver`, `https://t.example.com:8443/campaign` or
    /// `http://127.0.0.1:9000`.
    ///
    /// - Parameter role: the setting's name for error messages (`--tracking-host`).
    /// - Throws: ``ParseError`` for an empty value (the SDKs' "hostname empty" outcome), an unknown
    ///   scheme, a bad port, or a query or fragment.
    public init(parsing text: String, role: String) throws(ParseError) {
        var rest = Substring(text.trimmingSpaces())
        guard !rest.isEmpty else { throw ParseError(description: "\(role) is empty") }
        if let separator = Self.schemeSeparator(in: rest) {
            let scheme = rest[..<separator.lowerBound].lowercased()
            guard scheme == "https" || scheme == "http" else {
                throw ParseError(description: "\(role) \(text): scheme \(scheme) is not https or http")
            }
            self.scheme = scheme
            rest = rest[separator.upperBound...]
        } else {
            scheme = "https"
        }
        guard !rest.contains("?"), !rest.contains("#") else {
            throw ParseError(description: "\(role) \(text): a host may not have a query or fragment")
        }
        let authority: Substring
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            var prefix = String(rest[slash...])
            while prefix.hasSuffix("/") { prefix.removeLast() }
            pathPrefix = prefix
        } else {
            authority = rest
            pathPrefix = ""
        }
        var hostPart = authority
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw ParseError(description: "\(role) \(text): unterminated IPv6 address") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                portPart = after.dropFirst()
            } else if !after.isEmpty {
                throw ParseError(description: "\(role) \(text): unexpected text after the IPv6 address")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { throw ParseError(description: "\(role) \(text): no host name") }
        guard hostPart.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" || $0 == "_" }) else {
            throw ParseError(description: "\(role) \(text): invalid character in the host name")
        }
        host = String(hostPart)
        if let portPart {
            guard let value = Int(portPart), (1...65535).contains(value) else {
                throw ParseError(description: "\(role) \(text): port \(portPart) is not 1 to 65535")
            }
            port = value
        } else {
            port = nil
        }
    }

    private static func schemeSeparator(in text: Substring) -> Range<Substring.Index>? {
        var index = text.startIndex
        while index < text.endIndex {
            let rest = text[index...]
            if rest.hasPrefix("://") { return index..<text.index(index, offsetBy: 3) }
            if text[index] == "/" { return nil }
            index = text.index(after: index)
        }
        return nil
    }

    /// `scheme://host[:port]` (IPv6 addresses in brackets).
    public var origin: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(name)" + (port.map { ":\($0)" } ?? "")
    }

    /// The full URL of `path` (which starts with `/`) on this host.
    public func url(_ path: String) -> String { origin + pathPrefix + path }

    public var description: String { origin + pathPrefix }
}
