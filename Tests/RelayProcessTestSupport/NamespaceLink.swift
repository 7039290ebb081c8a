import Foundation
import NIOConcurrencyHelpers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Two network namespaces of the test's own, `near` and `far`, joined by a veth pair on which
/// faults are injected, with `near` also reachable from the test process over a second veth pair
/// that stays clean (the test's clients talk to a relay in `near` through it).
///
/// Why not `tc qdisc … netem`: the kernels of this project's machines (Firecracker guests) are
/// built without `sch_netem` and without tc classifiers or actions, so the faults are made with
/// netfilter inside the two namespaces instead, which those kernels have: `-m statistic` drops for
/// loss, `DROP` everything for a silent partition (netem's `loss 100%`), and `NFQUEUE` to
/// Scripts/netfilter_delay.py, which holds each packet `delay` before accepting it (netem's
/// `delay`). Every rule lives in the two namespaces, on the veth between them: nothing outside them
/// is touched, and deleting the namespaces (``remove()``, in a `defer`) removes every rule, link and
/// address with them. Names carry the test process's id, so runs never collide.
package final class NamespaceLink: Sendable {
    /// A fault on the link between `near` and `far`, in both directions unless said otherwise.
    package enum Fault: Sendable, CustomStringConvertible {
        case none
        /// Each packet dropped with this probability (percent), both ways.
        case loss(percent: Int)
        /// Each packet from `near` to `far` held this long (milliseconds): the round trip grows by it.
        case delay(milliseconds: Int)
        /// Every packet dropped, both ways, silently (no reset, no unreachable).
        case partition

        package var description: String {
            switch self {
            case .none: "none"
            case .loss(let percent): "loss \(percent)%"
            case .delay(let milliseconds): "delay \(milliseconds) ms"
            case .partition: "partition"
            }
        }
    }

    package let near: String
    package let far: String
    /// The address of `near` on the clean link from the test process.
    package let nearFromHost: String
    /// The test process's end of the clean link.
    private let hostAddress: String
    /// The addresses of `near` and `far` on the faulty link.
    package let nearAddress: String
    package let farAddress: String
    private let nearDevice: String
    private let farDevice: String
    private let delayQueue = 7
    private let delayer = NIOLockedValueBox<ChildProcess?>(nil)

    package static let ip = "/usr/sbin/ip"
    package static let iptables = "/usr/sbin/iptables"

    private init(tag: String, subnet: Int) {
        let pid = getpid()
        near = "cr\(pid)\(tag)n"
        far = "cr\(pid)\(tag)f"
        nearDevice = "cr\(pid)\(tag)a"
        farDevice = "cr\(pid)\(tag)b"
        let third = subnet >> 6
        let fourth = (subnet & 63) * 4
        nearAddress = "10.213.\(third).\(fourth + 1)"
        farAddress = "10.213.\(third).\(fourth + 2)"
        nearFromHost = "10.214.\(third).\(fourth + 2)"
        hostAddress = "10.214.\(third).\(fourth + 1)"
    }

    /// What these tests need of the machine, checked first so that a missing piece fails the test
    /// with its name instead of a confusing error half-way (CI runs as root and installs iproute2
    /// and iptables).
    package static func requireTools() throws {
        try #require(geteuid() == 0, "network fault tests need root (network namespaces, veth, iptables); run swift test as root")
        for tool in [ip, iptables] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "network fault tests need \(tool) (apt-get install iproute2 iptables)")
        }
    }

    /// Makes the namespaces and links; `tag` (a letter or two) tells a test's links apart.
    package static func make(tag: String) async throws -> NamespaceLink {
        try requireTools()
        // A /30 per link from the process id, so that parallel runs on one machine differ.
        let link = NamespaceLink(tag: tag, subnet: (Int(getpid()) * 7 + Int(tag.unicodeScalars.first?.value ?? 0)) % 16_000)
        do {
            try await link.setUp()
        } catch {
            await link.remove()
            throw error
        }
        return link
    }

    private func setUp() async throws {
        let hostDevice = nearDevice + "h"
        try await Self.run(Self.ip, ["netns", "add", near])
        try await Self.run(Self.ip, ["netns", "add", far])
        for namespace in [near, far] { try await Self.run(Self.ip, ["-n", namespace, "link", "set", "lo", "up"]) }
        try await Self.run(Self.ip, ["link", "add", nearDevice, "netns", near, "type", "veth", "peer", "name", farDevice, "netns", far])
        try await Self.run(Self.ip, ["-n", near, "addr", "add", nearAddress + "/30", "dev", nearDevice])
        try await Self.run(Self.ip, ["-n", far, "addr", "add", farAddress + "/30", "dev", farDevice])
        try await Self.run(Self.ip, ["-n", near, "link", "set", nearDevice, "up"])
        try await Self.run(Self.ip, ["-n", far, "link", "set", farDevice, "up"])
        // The clean link: its root end is deleted with `near` (a veth pair dies with either end).
        try await Self.run(Self.ip, ["link", "add", hostDevice, "type", "veth", "peer", "name", nearDevice + "i", "netns", near])
        try await Self.run(Self.ip, ["addr", "add", hostAddress + "/30", "dev", hostDevice])
        try await Self.run(Self.ip, ["-n", near, "addr", "add", nearFromHost + "/30", "dev", nearDevice + "i"])
        try await Self.run(Self.ip, ["link", "set", hostDevice, "up"])
        try await Self.run(Self.ip, ["-n", near, "link", "set", nearDevice + "i", "up"])
    }

    /// Replaces the fault on the link with `fault` (`.none` heals it).
    package func apply(_ fault: Fault) async throws {
        for namespace in [near, far] { try await Self.run(Self.ip, ["netns", "exec", namespace, Self.iptables, "-F", "OUTPUT"]) }
        switch fault {
        case .none:
            return
        case .loss(let percent):
            for (namespace, device) in [(near, nearDevice), (far, farDevice)] {
                try await iptables(
                    namespace,
                    [
                        "-A", "OUTPUT", "-o", device, "-m", "statistic", "--mode", "random", "--probability", String(Double(percent) / 100), "-j",
                        "DROP",
                    ])
            }
        case .delay(let milliseconds):
            try await startDelayer(milliseconds: milliseconds)
            try await iptables(near, ["-A", "OUTPUT", "-o", nearDevice, "-j", "NFQUEUE", "--queue-num", String(delayQueue), "--queue-bypass"])
        case .partition:
            for (namespace, device) in [(near, nearDevice), (far, farDevice)] {
                try await iptables(namespace, ["-A", "OUTPUT", "-o", device, "-j", "DROP"])
            }
        }
    }

    private func iptables(_ namespace: String, _ arguments: [String]) async throws {
        try await Self.run(Self.ip, ["netns", "exec", namespace, Self.iptables] + arguments)
    }

    /// (Re)starts Scripts/netfilter_delay.py in `near` holding packets `milliseconds`.
    private func startDelayer(milliseconds: Int) async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts/netfilter_delay.py").path
        let old = delayer.withLockedValue { $0 }
        if let old, old.process.isRunning {
            kill(old.process.processIdentifier, SIGKILL)
            await old.process.exited()
        }
        let started = try ChildProcess(Self.ip, ["netns", "exec", near, "python3", script, String(delayQueue), String(milliseconds)])
        delayer.withLockedValue { $0 = started }
        // Until it has bound the queue, --queue-bypass would let packets through undelayed.
        _ = try await started.await("(ready)")
    }

    /// The arguments that run `command` inside `namespace`.
    package func inside(_ namespace: String, _ command: [String]) -> [String] {
        ["netns", "exec", namespace] + command
    }

    /// A GET from inside `namespace` (where the test process has no route), with curl.
    package func get(in namespace: String, _ url: String) async throws -> String {
        let outcome = try await RelayBinary.run(Self.ip, ["netns", "exec", namespace, "curl", "-sS", "--max-time", "20", url], seconds: 30)
        try #require(outcome.status == 0, "GET \(url) in \(namespace): \(outcome.stderr)")
        return outcome.stdout
    }

    /// Stops what runs in the namespaces (only processes started in them, by this test) and deletes
    /// them, with their links, addresses and rules; waits without holding a thread.
    package func remove() async {
        if let delayer = delayer.withLockedValue({ $0 }), delayer.process.isRunning {
            kill(delayer.process.processIdentifier, SIGKILL)
            await delayer.process.exited()
        }
        for namespace in [near, far] {
            let pids = (try? await RelayBinary.run(Self.ip, ["netns", "pids", namespace], seconds: 10).stdout) ?? ""
            for pid in pids.split(separator: "\n").compactMap({ pid_t($0) }) { kill(pid, SIGKILL) }
            _ = try? await RelayBinary.run(Self.ip, ["netns", "del", namespace], seconds: 10)
        }
    }

    /// ``remove()`` for a `defer`, which cannot wait: the same work on a thread of its own. Tests
    /// `await remove()` at their end, so this does something only when a test stopped early.
    package func removeWithoutWaiting() {
        let namespaces = [near, far]
        let delayer = delayer.withLockedValue { $0 }
        Thread {
            if let delayer, delayer.process.isRunning {
                kill(delayer.process.processIdentifier, SIGKILL)
                delayer.process.waitUntilExit()
            }
            for namespace in namespaces {
                let pids = (try? BoundedRun.runBlocking(Self.ip, ["netns", "pids", namespace], seconds: 10).stdout) ?? ""
                for pid in pids.split(separator: "\n").compactMap({ pid_t($0) }) { kill(pid, SIGKILL) }
                _ = try? BoundedRun.runBlocking(Self.ip, ["netns", "del", namespace], seconds: 10)
            }
        }.start()
    }

    @discardableResult
    package static func run(_ tool: String, _ arguments: [String]) async throws -> String {
        let outcome = try await RelayBinary.run(tool, arguments, seconds: 30)
        try #require(outcome.status == 0, "\(tool) \(arguments.joined(separator: " ")) failed (\(outcome.status)): \(outcome.stderr)")
        return outcome.stdout
    }
}
