import Foundation
import RelayTestSupport

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
    guard let held = LoopbackSocket.bound(port: port) else { return false }
    close(held.descriptor)
    return true
}
