import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `count` distinct free loopback ports below Linux's ephemeral range (32768 and up), for a server restarted on
/// the port its first start got while its clients keep retrying.
///
/// A port from the ephemeral range (what `--bind 127.0.0.1:0` gets) can be taken while the server
/// is down: a client retrying `connect` to it may get that very port as its own source port (a
/// TCP self-connect on loopback) or another outgoing connection may, and the restart then fails
/// with "address already in use". Ports below the range are never handed out as source ports.
/// The search starts at a place that depends on the process id, so that concurrent test
/// processes seldom probe the same ports; a port found free may still be taken before the server
/// binds it, which the caller sees as a failed start.
package func portsBelowEphemeralRange(_ count: Int) throws -> [Int] {
    let start = Int(getpid()) % 10_000
    var found: [Int] = []
    for offset in 0..<2_000 where found.count < count {
        let port = 20_000 + (start + offset * 7) % 12_000
        if portIsFree(port) { found.append(port) }
    }
    guard found.count == count else { throw NoFreePort() }
    return found
}

/// Fewer free ports below the ephemeral range than asked for were found.
package struct NoFreePort: Error {}

private func portIsFree(_ port: Int) -> Bool {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}
