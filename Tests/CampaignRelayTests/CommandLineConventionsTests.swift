#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// What a user sees when a command fails: usage errors exit 64 with usage, runtime errors exit 1
/// with the command's own message.
@Suite("Command-line errors", .timeLimit(.minutes(2)))
struct CommandLineConventionsTests {
    static func scratch(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)").path
    }

    @Test("runtime errors exit 1 with the subcommand's message and no usage", arguments: [
        (["ingest", "nope.jsonl"], "Error: cannot open nope.jsonl"),
        (["replay", "--from", "1"], "Error: no Campaign host to send to"),
        (["upload", "--tracking-host", "ftp://x"], "Error: --tracking-host ftp://x: scheme ftp is not https or http"),
        (["serve", "--bind", "0.0.0.0:0"], "Error: refusing to listen on 0.0.0.0 without --admin-token"),
    ])
    func runtimeErrors(arguments: [String], message: String) throws {
        let directory = Self.scratch("cli")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let run = try RelayBinary.run(try RelayBinary.path(), arguments + ["--data-dir", directory])
        #expect(run.status == 1, "\(arguments): \(run.status) \(run.stderr)")
        #expect(run.stderr.hasPrefix(message), "\(run.stderr)")
        #expect(!run.stderr.contains("USAGE:"), "a runtime error is not a usage error: \(run.stderr)")
    }

    @Test("deadletter retry --id of a letter that does not exist: exit 1, pointing at deadletter list")
    func unknownDeadLetter() throws {
        let binary = try RelayBinary.path()
        let directory = Self.scratch("cli-dead")
        let missing = try RelayBinary.run(binary, ["deadletter", "retry", "--id", "99", "--data-dir", directory])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("Error: no data directory at \(directory)"), "\(missing.stderr)")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let unknown = try RelayBinary.run(binary, ["deadletter", "retry", "--id", "99", "--data-dir", directory])
        #expect(unknown.status == 1)
        #expect(unknown.stderr == "Error: no pending dead letter with id 99; see campaign-relay deadletter list\n", "\(unknown.stderr)")
    }

    @Test("usage errors keep exit 64 and the usage")
    func usageErrors() throws {
        let run = try RelayBinary.run(try RelayBinary.path(), ["serve", "--bind", "nonsense"])
        #expect(run.status == 64)
        #expect(run.stderr.contains("Usage: campaign-relay serve") || run.stderr.contains("USAGE:"), "\(run.stderr)")
    }

    @Test("a port in use: exit 1, and the message names the address and what to do")
    func portInUse() throws {
        // Hold a port with a listening socket of this process.
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        try #require(bound == 0 && listen(descriptor, 1) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        let port = Int(UInt16(bigEndian: address.sin_port))

        let run = try RelayBinary.run(try RelayBinary.path(), ["serve", "--bind", "127.0.0.1:\(port)", "--data-dir", Self.scratch("busy")])
        #expect(run.status == 1)
        #expect(
            run.stderr.contains("Error: cannot listen on 127.0.0.1:\(port): the address is already in use (another campaign-relay or program listens there); stop it, or choose another --bind"),
            "\(run.stderr)"
        )
        #expect(!run.stderr.contains("errno"), "no socket-call jargon: \(run.stderr)")
    }
}
