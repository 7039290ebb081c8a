import AsyncHTTPClient
import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
    import Glibc
#endif

/// Transport errors in words an operator reads ("connection refused"), instead of SwiftNIO's
/// descriptions of system calls.
enum TransportErrorText {
    /// A short, lower-case description of `error`.
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as NIOConnectionError:
            if let failure = error.connectionErrors.first { return describe(failure.error) }
            if let failure = error.dnsAError ?? error.dnsAAAAError { return "cannot resolve \(error.host) (\(describe(failure)))" }
            return "cannot connect to \(error.host):\(error.port)"
        case let error as IOError:
            return String(cString: strerror(error.errnoCode)).lowercased()
        case let error as ChannelError where error == .connectTimeout(.zero) || "\(error)".hasPrefix("connectTimeout"):
            return "connection timed out"
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout: return "connection timed out"
            case .remoteConnectionClosed: return "the host closed the connection before answering"
            case .readTimeout, .deadlineExceeded: return "no answer in time"
            default: return "\(error)"
            }
        case let error as NIOSSLError:
            return "TLS failed: \(error)" + clientCertificateHint("\(error)")
        case let error as BoringSSLError:
            return "TLS failed: \(error)" + clientCertificateHint("\(error)")
        default:
            return "\(error)"
        }
    }

    /// What to do when the host refused the handshake for want of a (good) client certificate:
    /// BoringSSL names the alert the host sent.
    static func clientCertificateHint(_ text: String) -> String {
        if text.contains("CERTIFICATE_REQUIRED") {
            return "; the host requires a client certificate: give --upstream-client-cert and --upstream-client-key"
        }
        if text.contains("ALERT_UNKNOWN_CA") || text.contains("ALERT_BAD_CERTIFICATE") || text.contains("ALERT_CERTIFICATE_UNKNOWN") {
            return "; the host refused this relay's client certificate: give one issued by the CA of its --tls-client-ca"
        }
        return ""
    }
}
