#if canImport(Glibc)
    import Glibc
#endif

/// Checks, before the server opens its log, that it can listen on its address, so a busy port is
/// reported at once with the address and what to do (instead of a socket error after start-up).
enum ListenAddressCheck {
    /// `nil` when `host`:`port` can be bound now (or the port is 0); else what is wrong.
    static func problem(host: String, port: Int) -> String? {
        guard port != 0 else { return nil }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            return "cannot listen on \(host):\(port): \(String(cString: gai_strerror(status))); give --bind an address of this machine"
        }
        defer { freeaddrinfo(list) }
        let descriptor = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard descriptor >= 0 else { return nil }  // let the server report it
        defer { close(descriptor) }
        // As the server itself will: reusing an address in TIME_WAIT is fine, a listener is not.
        var one: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(descriptor, first.pointee.ai_addr, first.pointee.ai_addrlen) != 0 else { return nil }
        let code = errno
        switch code {
        case EADDRINUSE:
            return
                "cannot listen on \(host):\(port): the address is already in use (another campaign-relay or program listens there); stop it, or choose another --bind"
        case EACCES:
            return
                "cannot listen on \(host):\(port): permission denied (ports below 1024 need privileges); choose a port from 1024 up, or grant CAP_NET_BIND_SERVICE"
        case EADDRNOTAVAIL:
            return
                "cannot listen on \(host):\(port): the address is not one of this machine's; give --bind an address of this machine (0.0.0.0 for all)"
        default:
            return "cannot listen on \(host):\(port): \(String(cString: strerror(code)))"
        }
    }
}
