import Logging
import NIOSSL
public import PostgresNIO

/// Where the fleet's counts live: a `postgres://` URL (`--postgres-url`, env
/// `CAMPAIGN_RELAY_POSTGRES_URL`) turned into a PostgresNIO connection configuration.
///
/// `postgres://USER[:PASSWORD]@HOST[:PORT][,HOST2[:PORT2]...]/DATABASE[?sslmode=MODE&sslrootcert=FILE&target_session_attrs=read-write|any]`,
/// with `postgresql://` accepted too. With several hosts (libpq's form), a connection goes to the
/// first that answers and, unless `target_session_attrs=any`, is not in recovery (a writable primary). `sslmode` is `disable`, `prefer` (the default, as libpq), `require` (TLS, the
/// server's certificate not checked, as libpq), `verify-ca` or `verify-full` (checked against the
/// system's roots, or `sslrootcert`'s). User and password may be percent-encoded.
public struct PostgresLocation: Sendable, CustomStringConvertible {
    /// The configuration of a connection to the first host (see ``connectedSession(timeout:logger:_:)``).
    public let connectionConfiguration: PostgresConnection.Configuration
    /// One configuration per host of the URL, in its order (libpq's `HOST1:PORT1,HOST2:PORT2`).
    public let hostConfigurations: [PostgresConnection.Configuration]
    /// Whether only a writable primary will do (`target_session_attrs=read-write`, the default with
    /// several hosts): a host in recovery (a standby) is passed over.
    public let requiresWritable: Bool
    /// The URL without its password, for logs and messages.
    public let description: String

    /// Why a URL cannot be used.
    public struct Invalid: Error, Sendable, CustomStringConvertible {
        /// What is wrong and what to do.
        public let description: String
    }

    /// Parses `url`, given as `option` (named in errors).
    ///
    /// - Throws: ``Invalid`` naming the part that is wrong.
    public init(url: String, option: String = "--postgres-url") throws(Invalid) {
        func invalid(_ reason: String) -> Invalid {
            Invalid(
                description:
                    "\(option): \(reason); expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require|verify-ca|verify-full]"
            )
        }
        guard let schemeEnd = url.range(of: "://") else { throw invalid("no postgres:// scheme") }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "postgres" || scheme == "postgresql" else { throw invalid("the scheme is \(scheme), not postgres") }
        var rest = url[schemeEnd.upperBound...]
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        guard let at = rest.lastIndex(of: "@") else { throw invalid("no user (USER@HOST)") }
        let userInfo = rest[..<at]
        let hostAndPath = rest[rest.index(after: at)...]
        let user: String
        let password: String?
        if let colon = userInfo.firstIndex(of: ":") {
            user = try Self.percentDecoded(userInfo[..<colon], invalid("the user is badly percent-encoded"))
            password = try Self.percentDecoded(userInfo[userInfo.index(after: colon)...], invalid("the password is badly percent-encoded"))
        } else {
            user = try Self.percentDecoded(userInfo, invalid("the user is badly percent-encoded"))
            password = nil
        }
        guard !user.isEmpty else { throw invalid("the user is empty") }
        guard let slash = hostAndPath.firstIndex(of: "/") else { throw invalid("no database (/DATABASE after the host)") }
        let database = String(hostAndPath[hostAndPath.index(after: slash)...])
        guard !database.isEmpty else { throw invalid("the database is empty") }
        // libpq's multi-host form: HOST[:PORT] pairs separated by commas, tried in order.
        var hosts: [(host: String, port: Int)] = []
        for item in hostAndPath[..<slash].split(separator: ",", omittingEmptySubsequences: false) {
            var hostPort = item
            var port = 5432
            if let colon = hostPort.lastIndex(of: ":"), !hostPort.hasSuffix("]") {
                guard let number = Int(hostPort[hostPort.index(after: colon)...]), (1...65535).contains(number) else {
                    throw invalid("the port is not a number from 1 to 65535")
                }
                port = number
                hostPort = hostPort[..<colon]
            }
            let host = String(hostPort.hasPrefix("[") && hostPort.hasSuffix("]") ? hostPort.dropFirst().dropLast() : hostPort)
            guard !host.isEmpty else { throw invalid("the host is empty") }
            hosts.append((host, port))
        }
        var sessionAttributes: String?
        var sslMode = "prefer"
        var rootCertificate: String?
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1)
            let value = parts.count == 2 ? String(parts[1]) : ""
            switch parts[0] {
            case "sslmode": sslMode = value
            case "sslrootcert": rootCertificate = value
            case "target_session_attrs": sessionAttributes = value
            default: throw invalid("unknown parameter \(parts[0]) (sslmode, sslrootcert and target_session_attrs are understood)")
            }
        }
        let connectionTLS: PostgresConnection.Configuration.TLS
        var context = TLSConfiguration.makeClientConfiguration()
        switch sslMode {
        case "disable":
            connectionTLS = .disable
        case "prefer", "require", "verify-ca", "verify-full":
            switch sslMode {
            case "prefer", "require": context.certificateVerification = .none
            case "verify-ca": context.certificateVerification = .noHostnameVerification
            default: context.certificateVerification = .fullVerification
            }
            if let rootCertificate { context.trustRoots = .file(rootCertificate) }
            let sslContext: NIOSSLContext
            do {
                sslContext = try NIOSSLContext(configuration: context)
            } catch {
                throw invalid("TLS cannot be set up (\(error)); check sslrootcert")
            }
            connectionTLS = sslMode == "prefer" ? .prefer(sslContext) : .require(sslContext)
        default:
            throw invalid("sslmode \(sslMode) is not one of disable, prefer, require, verify-ca, verify-full")
        }
        switch sessionAttributes {
        case nil: requiresWritable = hosts.count > 1
        case "read-write", "primary": requiresWritable = true
        case "any": requiresWritable = false
        case let other?: throw invalid("target_session_attrs \(other) is not one of read-write, primary, any")
        }
        hostConfigurations = hosts.map { host, port in
            var connection = PostgresConnection.Configuration(
                host: host, port: port, username: user, password: password, database: database, tls: connectionTLS)
            connection.options.connectTimeout = .seconds(5)
            connection.options.additionalStartupParameters = [("application_name", "campaign-relay")]
            return connection
        }
        connectionConfiguration = hostConfigurations[0]
        let hostList = hosts.map { "\($0.host.contains(":") ? "[\($0.host)]" : $0.host):\($0.port)" }.joined(separator: ",")
        description = "postgres://\(user)\(password == nil ? "" : ":***")@\(hostList)/\(database)" + (query.isEmpty ? "" : "?\(query)")
    }

    private static func percentDecoded(_ text: Substring, _ failure: Invalid) throws(Invalid) -> String {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let high = utf8.index(after: index)
                guard high < utf8.endIndex, utf8.index(after: high) < utf8.endIndex,
                    let value = UInt8(String(decoding: [utf8[high], utf8[utf8.index(after: high)]], as: UTF8.self), radix: 16)
                else { throw failure }
                bytes.append(value)
                index = utf8.index(high, offsetBy: 2)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
