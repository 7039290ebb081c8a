import ArgumentParser

/// A `host:port` to listen on (`[::1]:8080` for IPv6).
struct BindAddress {
    var host: String
    var port: Int

    init(_ text: String) throws {
        let example = "host:port, such as 127.0.0.1:8080, 0.0.0.0:8080 or [::1]:8080"
        guard let colon = text.lastIndex(of: ":") else { throw ValidationError("--bind \(text) is not \(example)") }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw ValidationError("--bind \(text): the host is empty; give \(example)") }
        guard let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw ValidationError("--bind \(text): the port must be a number from 0 to 65535 (0: any free port)")
        }
        self.host = host
        self.port = port
    }

    /// Whether the address only accepts connections from this machine.
    var isLoopback: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
