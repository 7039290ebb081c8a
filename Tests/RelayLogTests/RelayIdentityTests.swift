import Foundation
import RelayCore
import RelayLog
import RelayTestSupport
import TestTiers
import Testing

/// The relay id and epochs of a data directory: made once, kept, and moved to a new epoch when
/// the directory is a copy.
@Suite("Relay identity", .tier(.fast), .seedInFailures)
struct RelayIdentityTests {
    /// Whether `text` is a lower-case version 4 UUID.
    static func isUUIDv4(_ text: String) -> Bool {
        text.wholeMatch(of: #/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/#) != nil
    }

    static func hits(_ count: Int) throws -> [Event] {
        try (1...count).map { _ in
            .tracking(TrackingEvent(action: .open, messageId: try MessageID("1"), deliveryId: "d", time: EventTime(nanosecondsSinceEpoch: 0)))
        }
    }

    @Test("the first open makes the identity (a version 4 UUID, epoch 1 from sequence 1); later opens keep it byte for byte")
    func madeOnceAndKept() async throws {
        let directory = temporaryDirectory("identity")
        defer { removeTree(directory) }
        let first = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        let identity = first.identity
        #expect(Self.isUUIDv4(identity.relayID), "\(identity.relayID)")
        #expect(identity.epochs.map(\.number) == [1])
        #expect(identity.epoch.firstSequence == 1)
        #expect(identity.epoch.reason == "first opened")
        _ = try await first.append(try Self.hits(3))
        await first.close()
        let path = LogLayout(dataDirectory: directory).identityFile
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(String(decoding: bytes, as: UTF8.self) == identity.json)

        let second = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        #expect(second.identity == identity)
        await second.close()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes, "an unchanged identity is not rewritten")
        #expect(RelayIdentity.read(dataDirectory: directory) == identity)
        // Two directories are two relays.
        let other = temporaryDirectory("identity-other")
        defer { removeTree(other) }
        let third = try await WriteAheadLog.open(dataDirectory: other, logger: quietLogger)
        #expect(third.identity.relayID != identity.relayID)
        await third.close()
    }

    @Test("a copy of the directory keeps the relay id and starts a new epoch at its next sequence; the original stays in its epoch")
    func copyStartsAnEpoch() async throws {
        let original = temporaryDirectory("identity-original")
        let copy = temporaryDirectory("identity-copy")
        defer {
            removeTree(original)
            removeTree(copy)
        }
        let log = try await WriteAheadLog.open(dataDirectory: original, logger: quietLogger)
        _ = try await log.append(try Self.hits(5))
        let identity = log.identity
        await log.close()
        // cp -a: the same bytes, another directory (as a backup restored, or a clone).
        removeTree(copy)
        let cp = try SpawnedProcess("/bin/cp", ["-a", original, copy])
        await cp.exited()
        #expect(cp.terminationStatus == 0)

        let copied = try await WriteAheadLog.open(dataDirectory: copy, logger: quietLogger)
        #expect(copied.identity.relayID == identity.relayID)
        #expect(copied.identity.epochs.map(\.number) == [1, 2])
        #expect(copied.identity.epoch.firstSequence == 6)
        #expect(copied.identity.epoch.reason.hasPrefix("the data directory is a copy"))
        #expect(copied.identity.epochNumber(of: 5) == 1)
        #expect(copied.identity.epochNumber(of: 6) == 2)
        _ = try await copied.append(try Self.hits(2))
        await copied.close()
        // The copy keeps its new epoch; the original keeps its own.
        let again = try await WriteAheadLog.open(dataDirectory: copy, logger: quietLogger)
        #expect(again.identity.epochs.map(\.number) == [1, 2])
        await again.close()
        let back = try await WriteAheadLog.open(dataDirectory: original, logger: quietLogger)
        #expect(back.identity == identity)
        await back.close()
    }

    @Test("a log from before identities gets one that covers its events; an unreadable file is quarantined and a new relay id made")
    func missingAndUnreadable() async throws {
        let directory = temporaryDirectory("identity-damaged")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        _ = try await log.append(try Self.hits(4))
        let first = log.identity
        await log.close()
        let path = LogLayout(dataDirectory: directory).identityFile
        try FileManager.default.removeItem(atPath: path)
        let upgraded = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        #expect(upgraded.identity.epochs.map(\.firstSequence) == [1], "epoch 1 covers the events logged before the identity")
        #expect(upgraded.identity.relayID != first.relayID)
        await upgraded.close()

        try Data("{\"format\":1,\"relayId\":".utf8).write(to: URL(fileURLWithPath: path))
        let recreated = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        #expect(recreated.identity.relayID != upgraded.identity.relayID)
        #expect(recreated.identity.epoch.firstSequence == 5)
        #expect(recreated.identity.epoch.reason == "made anew: the identity file was unreadable")
        await recreated.close()
        let kept = try FileManager.default.contentsOfDirectory(atPath: "\(directory)/quarantine")
        #expect(kept.contains { $0.hasPrefix("identity.json.") && !$0.hasSuffix(".txt") }, "\(kept)")
        #expect(kept.contains { $0.hasPrefix("identity.json.") && $0.hasSuffix(".txt") }, "\(kept)")
    }

    @Test("power lost at every step of the first open: the next open finds or makes one readable identity, and one made never changes")
    func powerLossDuringCreation() async throws {
        var generator = SeededGenerator(seed: TestSeed.make(for: "identity power losses"))
        var crashPoints = 0
        for crashAt in 1...40 {
            let fileSystem = SimulatedFileSystem()
            fileSystem.crash(afterOperations: crashAt)
            var opened: RelayIdentity?
            do {
                let log = try await WriteAheadLog.open(dataDirectory: "/data", fileSystem: fileSystem, logger: quietLogger)
                opened = log.identity
                _ = try? await log.append(try Self.hits(2))
                await log.close()
            } catch {
                crashPoints += 1
            }
            let afterCrash = fileSystem.crashedCopy(using: &generator)
            let reopened = try await WriteAheadLog.open(dataDirectory: "/data", fileSystem: afterCrash, logger: quietLogger)
            if let opened {
                #expect(reopened.identity.relayID == opened.relayID, "crash at \(crashAt): an identity the open returned must survive")
                #expect(reopened.identity.epochs == opened.epochs)
            }
            #expect(Self.isUUIDv4(reopened.identity.relayID))
            #expect(RelayIdentity.read(dataDirectory: "/data", fileSystem: afterCrash) == reopened.identity)
            await reopened.close()
            if opened != nil && crashAt > crashPoints + 10 { break }
        }
        #expect(crashPoints >= 5, "the crash should land inside the first open \(crashPoints) times")
    }

    @Test("the example in docs/relay-identity.md is a file the relay reads, and the relay writes that shape")
    func documentedExample() async throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let document = try String(contentsOf: repository.appendingPathComponent("docs/relay-identity.md"), encoding: .utf8)
        let block = try #require(document.components(separatedBy: "```json\n").dropFirst().first?.components(separatedBy: "\n```").first)
        let directory = temporaryDirectory("identity-doc")
        defer { removeTree(directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data((block + "\n").utf8).write(to: URL(fileURLWithPath: LogLayout(dataDirectory: directory).identityFile))
        let identity = try #require(RelayIdentity.read(dataDirectory: directory))
        #expect(identity.relayID == "598ef5b4-921c-4ba5-b8e1-ef71a5e2a510")
        #expect(identity.epochs.map(\.number) == [1, 2])
        #expect(identity.epochNumber(of: 1) == 1)
        #expect(identity.epochNumber(of: 2) == 2)
        #expect(identity.directory == FileIdentity(device: 65024, inode: 1_278_146))
        #expect(identity.json == block + "\n", "the relay writes the documented keys in the documented order")
    }
}
