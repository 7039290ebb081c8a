import ArgumentParser

/// A `host:port` to listen on (`[::1]:8080` for IPv6).
struct BindAddress {
    var host: String
    var port: Int

    init(_ text: String) throws {
        guard let colon = text.lastIndex(of: ":") else { throw ValidationError("\(text) is not host:port") }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw ValidationError("\(text): the host is empty") }
        guard let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw ValidationError("\(text): the port must be 0 to 65535")
        }
        self.host = host
        self.port = port
    }

    /// Whether the address only accepts connections from this machine.
    var isLoopback: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
