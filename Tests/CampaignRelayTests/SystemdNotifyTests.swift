import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `serve` under systemd's `Type=notify`: the real binary, with `NOTIFY_SOCKET` naming a datagram
/// socket the test listens on, as systemd's would.
@Suite("systemd Type=notify", .timeLimit(.minutes(10)), .tier(.fast))
struct SystemdNotifyTests {
    /// A bound `AF_UNIX` datagram socket, read without blocking.
    final class NotifySocket: Sendable {
        let descriptor: Int32

        /// Binds `name`: a path, or with a leading `@` a name in the abstract namespace.
        init(_ name: String) throws {
            descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            try #require(descriptor >= 0)
            var path = Array(name.utf8)
            let abstract = path.first == UInt8(ascii: "@")
            if abstract { path[0] = 0 }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path) }
            let length = socklen_t(2 + path.count + (abstract ? 0 : 1))
            let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) } }
            try #require(bound == 0, "bind \(name): \(String(cString: strerror(errno)))")
        }

        deinit { close(descriptor) }

        /// The next datagram, waiting up to `seconds` for it (polling, so no thread blocks); with
        /// 0, whether one has already come.
        func next(within seconds: Double) async throws -> String? {
            let deadline = Date().addingTimeInterval(seconds)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count > 0 { return String(decoding: buffer[..<count], as: UTF8.self) }
                if Date() >= deadline { return nil }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    @Test(
        "READY=1 once serve answers on its port, STOPPING=1 on SIGTERM before it exits 0; a path and an abstract socket alike",
        arguments: ["path", "abstract"])
    func readyThenStopping(kind: String) async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("systemd-notify")
        defer { removeTree(directory) }
        let name = kind == "path" ? "\(directory)-notify.sock" : "@campaign-relay-test-\(UUID().uuidString)"
        defer { if kind == "path" { unlink(name) } }
        let listener = try NotifySocket(name)
        let serve = try ChildProcess(
            binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory], environment: ["NOTIFY_SOCKET": name])
        defer { serve.stopWithoutWaiting() }

        let ready = try #require(try await listener.next(within: 30), "no notification within 30 s: \(serve.text)")
        let port = try #require(ready.firstMatch(of: /STATUS=listening on 127\.0\.0\.1:(\d+)/).map { String($0.output.1) }, "\(ready)")
        #expect(ready.hasPrefix("READY=1\n"), "\(ready)")
        // Ready means listening: the port answers at once.
        let http = TestHTTPClient()
        #expect(try await http.get("http://127.0.0.1:\(port)/healthz").status == 200)
        await http.shutdown()

        // Only one notification while running: the next one, whenever it comes, is the one the
        // SIGTERM causes, and nothing follows it once the process is gone.
        kill(serve.process.processIdentifier, SIGTERM)
        let stopping = try #require(try await listener.next(within: 30), "no notification after SIGTERM: \(serve.text)")
        #expect(stopping.hasPrefix("STOPPING=1\n"), "the notification after READY=1 is STOPPING=1: \(stopping)")
        #expect(await serve.exit(within: 30))
        #expect(serve.process.terminationReason == .exit && serve.process.terminationStatus == 0, "\(serve.text)")
        #expect(try await listener.next(within: 0) == nil, "nothing after STOPPING=1")
    }

    @Test("a NOTIFY_SOCKET nobody listens on is logged as a warning; serve runs and stops as usual")
    func unreachableSocket() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("systemd-notify-missing")
        defer { removeTree(directory) }
        let serve = try ChildProcess(
            binary, ["serve", "--bind", "127.0.0.1:0", "--data-dir", directory], environment: ["NOTIFY_SOCKET": "\(directory)-nobody.sock"])
        defer { serve.stopWithoutWaiting() }
        _ = try await serve.await(#"could not tell systemd the relay is (ready)"#)
        #expect(serve.text.contains("No such file or directory"), "\(serve.text)")
        kill(serve.process.processIdentifier, SIGTERM)
        #expect(await serve.exit(within: 30))
        #expect(serve.process.terminationStatus == 0, "\(serve.text)")
    }
}
