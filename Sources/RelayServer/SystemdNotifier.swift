import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// Tells systemd that the relay is ready or stopping, for a unit with `Type=notify`
/// (`docs/campaign-relay.service`): systemd then starts units ordered after the relay only once it
/// listens, and shows its status line in `systemctl status`.
///
/// The protocol is `sd_notify(3)`: newline-separated `KEY=VALUE` assignments in one datagram to the
/// `AF_UNIX` socket named by `NOTIFY_SOCKET` (a name starting with `@` is in the abstract
/// namespace). A few lines of socket calls, so no library. Without `NOTIFY_SOCKET` (not started by
/// systemd) it does nothing.
public struct SystemdNotifier: Sendable {
    /// The socket's path, or `nil`: nothing is sent.
    public let socketPath: String?

    /// A notifier sending to `socketPath` (`nil`: none).
    public init(socketPath: String?) {
        self.socketPath = socketPath.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The notifier systemd asked for through the environment, if any.
    public static func fromEnvironment() -> SystemdNotifier {
        SystemdNotifier(socketPath: getenv("NOTIFY_SOCKET").map { String(cString: $0) })
    }

    /// Why a notification was not delivered.
    public struct Failure: Error, CustomStringConvertible {
        /// What failed, with the socket's path and the system's reason.
        public var description: String
    }

    /// Sends `assignments` (for example `READY=1\nSTATUS=listening`). Does nothing without a
    /// socket. The send never waits: `MSG_DONTWAIT`, so a stalled systemd cannot hold a thread.
    ///
    /// - Throws: ``Failure`` when the socket path is unusable or the datagram is refused.
    public func notify(_ assignments: String) throws(Failure) {
        guard let socketPath else { return }
        var path = Array(socketPath.utf8)
        let abstract = path.first == UInt8(ascii: "@")
        if abstract { path[0] = 0 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        // A path needs its terminating zero inside sun_path; an abstract name does not.
        guard path.count + (abstract ? 0 : 1) <= MemoryLayout.size(ofValue: address.sun_path) else {
            throw Failure(description: "NOTIFY_SOCKET \(socketPath) is longer than a socket path may be")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
        let length = socklen_t(MemoryLayout.offset(of: \sockaddr_un.sun_path) ?? 2) + socklen_t(path.count + (abstract ? 0 : 1))
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket for NOTIFY_SOCKET \(socketPath): \(Self.reason())") }
        defer { close(descriptor) }
        let message = Array(assignments.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL), socketAddress, length) }
            }
        }
        guard sent == message.count else { throw Failure(description: "sending to NOTIFY_SOCKET \(socketPath): \(Self.reason())") }
    }

    /// Sends `assignments`, and on failure logs a warning that systemd was not told `what`: the
    /// relay runs on either way (systemd then times the start out, or sees the stop late).
    func notify(_ assignments: String, telling what: String, logger: Logger) {
        do {
            try notify(assignments)
        } catch {
            logger.warning("could not tell systemd \(what)", metadata: ["error": "\(error)"])
        }
    }

    private static func reason() -> String { String(cString: strerror(errno)) }
}
