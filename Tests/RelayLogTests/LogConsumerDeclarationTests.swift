import RelayCore
import RelayLog
import RelayTestSupport
import TestTiers
import Testing

/// Consumers are declared when the log opens: retention knows each of them before any other
/// moves, so no consumer loses events to another's progress, whatever order they run in.
@Suite("Log consumers declared at open", .tier(.fast))
struct LogConsumerDeclarationTests {
    /// Small segments that leave as soon as every cursor has passed them.
    static let configuration = LogConfiguration(segmentBytes: 4096, compressionLevel: 0, retention: .none)

    static func fill(_ log: WriteAheadLog) async throws {
        for batch in 0..<10 { _ = try await log.append((1...100).map { TestEvents.tracking(Int64(batch * 100 + $0)) }) }
    }

    @Test("a consumer declared at open holds every segment back until it has read it, however far another consumer goes")
    func declaredConsumerHoldsSegments() async throws {
        let directory = temporaryDirectory("declared")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(
            dataDirectory: directory, configuration: Self.configuration, consumers: [.ownStore("counter"), .cursorFile("forwarder")],
            logger: quietLogger)
        #expect(await log.consumers.map(\.name) == ["counter", "forwarder"])
        #expect(await log.consumers.map(\.positionStore) == [.ownStore, .cursorFile])
        try await Self.fill(log)
        // The counter reads everything before the forwarder has started.
        try await log.commitCursor("counter", to: 1001)
        #expect(await log.oldestSequence == 1)
        #expect(try await log.startPosition(of: "forwarder") == 1)
        var reader = log.reader(from: try await log.startPosition(of: "forwarder"))
        defer { reader.close() }
        let batch = try reader.read(maximumEvents: 2000, below: await log.durableSequence)
        #expect(batch.events.map(\.sequence) == Array(1...1000))
        // Once both have passed them, the segments go.
        try await log.commitCursor("forwarder", to: 1001)
        #expect(await log.oldestSequence > 1)
        #expect(try await log.startPosition(of: "forwarder") == 1001)
        await log.close()

        // Reopened without declarations: the cursors stay, and still hold segments back.
        let reopened = try await WriteAheadLog.open(dataDirectory: directory, configuration: Self.configuration, logger: quietLogger)
        #expect(await reopened.cursorPositionsByName == ["counter": 1001, "forwarder": 1001])
        #expect(await reopened.consumers.isEmpty)
        await reopened.close()
    }

    @Test("a consumer first declared on a trimmed log starts at the oldest event kept")
    func lateDeclarationStartsAtOldest() async throws {
        let directory = temporaryDirectory("late")
        defer { removeTree(directory) }
        let first = try await WriteAheadLog.open(
            dataDirectory: directory, configuration: Self.configuration, consumers: [.cursorFile("forwarder")], logger: quietLogger)
        try await Self.fill(first)
        try await first.commitCursor("forwarder", to: 1001)
        let oldest = await first.oldestSequence
        #expect(oldest > 1)
        await first.close()
        let second = try await WriteAheadLog.open(
            dataDirectory: directory, configuration: Self.configuration, consumers: [.ownStore("counter")], logger: quietLogger)
        #expect(await second.cursorPosition("counter") == oldest)
        #expect(try await second.startPosition(of: "counter") == oldest)
        await second.close()
    }

    @Test("an undeclared consumer is refused with its name and the declared ones; a bad name refuses the open")
    func undeclaredConsumer() async throws {
        let directory = temporaryDirectory("undeclared")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [.cursorFile("forwarder")], logger: quietLogger)
        await #expect(throws: LogError.undeclaredConsumer("counter", declared: ["forwarder"])) {
            try await log.commitCursor("counter", to: 1)
        }
        await #expect(throws: LogError.undeclaredConsumer("counter", declared: ["forwarder"])) {
            _ = try await log.startPosition(of: "counter")
        }
        #expect(
            LogError.undeclaredConsumer("counter", declared: ["forwarder"]).description
                == "the log was opened without declaring the consumer counter (declared: forwarder); declare every consumer when the log opens, so that retention knows it from the start"
        )
        #expect(await log.cursorPosition("counter") == nil)
        await log.close()
        await #expect(throws: LogError.invalidCursorName("no/slash")) {
            _ = try await WriteAheadLog.open(dataDirectory: directory, consumers: [.cursorFile("no/slash")], logger: quietLogger)
        }
        // A tenant's lane names its cursor after the tenant: 96 bytes fit (the longest is 80), 97 do not.
        let longest = "upload-marketing_" + String(repeating: "t", count: 79)
        let tooLong = longest + "t"
        await #expect(throws: LogError.invalidCursorName(tooLong)) {
            _ = try await WriteAheadLog.open(dataDirectory: directory, consumers: [.cursorFile(tooLong)], logger: quietLogger)
        }
        let tenantLog = try await WriteAheadLog.open(dataDirectory: directory, consumers: [.cursorFile(longest)], logger: quietLogger)
        #expect(await tenantLog.cursorPosition(longest) != nil)
        await tenantLog.close()
        // The failed open released the lock: the log opens again.
        let again = try await WriteAheadLog.open(dataDirectory: directory, logger: quietLogger)
        await again.close()
    }
}
