import Foundation
import TestTiers
import Testing

/// The README's architecture, checked in the source: SQLite only behind RelaySQLite, file-system
/// calls only where a thread made for them runs them, and the Campaign wire format only in
/// CampaignProtocol. A change that breaks one of these fails here, naming the file and line.
@Suite("Architecture", .tier(.fast))
struct ArchitectureTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// One line of code, comments removed.
    struct CodeLine {
        var file: String
        var number: Int
        var text: String
    }

    /// Every line of code under `Sources/`, with `//` comments removed (string literals kept).
    static func sourceLines() throws -> [CodeLine] {
        let sources = repository.appendingPathComponent("Sources")
        guard let walker = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil) else { return [] }
        var lines: [CodeLine] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let file = String(url.path.dropFirst(repository.path.count + 1))
            let text = try String(contentsOf: url, encoding: .utf8)
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                if code.hasPrefix("//") { continue }
                lines.append(CodeLine(file: file, number: index + 1, text: String(line)))
            }
        }
        #expect(lines.count > 5000, "the walk should find the sources")
        return lines
    }

    static func module(_ file: String) -> String { file.split(separator: "/").dropFirst().first.map(String.init) ?? "" }

    @Test("SQLite's C API is imported by RelaySQLite alone, whose connections refuse to run off a BlockingExecutor")
    func sqliteStaysInItsModule() throws {
        let importers = try Self.sourceLines().filter { $0.text.contains("import CSQLite") }
        #expect(!importers.isEmpty)
        for line in importers { #expect(Self.module(line.file) == "RelaySQLite", "\(line.file):\(line.number)") }
    }

    @Test("locks are NIOLockedValueBox: the standard library's futex-based Mutex is invisible to ThreadSanitizer")
    func locksThreadSanitizerCanSee() throws {
        let lines = try Self.sourceLines()
        #expect(lines.contains { $0.text.contains("NIOLockedValueBox(") })
        for line in lines where line.text.contains("Mutex<") || line.text.contains("Mutex(") {
            Issue.record("\(line.file):\(line.number) uses Mutex; use NIOLockedValueBox (see docs/fuzzing.md#sanitizers)")
        }
    }

    /// The files allowed to make file-system calls, and why each runs them off the cooperative pool.
    static let fileSystemCallers: [String: String] = [
        "Sources/RelayLog/FileSystem/PosixFileSystem.swift":
            "the FileSystem layer: called on the log's, the aggregator's and the rebuild's executors",
        "Sources/RelayIO/BlockingExecutor.swift": "each executor names its own thread, on that thread",
        "Sources/RelayServer/ProcessMetrics.swift": "procfs reads on the proc-sampler executor",
        "Sources/RelayServer/ServerRecord.swift": "server.json, written and removed on the server-record executor",
        "Sources/CampaignRelay/Support/ChunkedInput.swift": "an actor on the ingest-read executor",
        "Sources/CampaignRelay/Support/CommonOptions.swift": "checks --data-dir while parsing arguments, before any task runs",
        "Sources/CampaignRelay/Support/StandardOutput.swift": "the command-line tool's own standard output",
        "Sources/CampaignRelay/Commands/StatsCommand.swift": "one existence check in the command-line tool, before it reads",
        "Sources/CampaignRelay/Support/ConfigurationFile.swift":
            "reads the --config file before the command line is parsed, before any task runs, and on the config-read executor when a command reads its tenants",
        "Sources/CampaignRelay/Support/TenantTable.swift": "checks each tenant's ca-file as ConfigurationFile reads the file, on its threads",
        "Sources/RelayLog/Encryption/LogKeyFile.swift":
            "reads --encryption-key-file and its mode on the key-file executor (EncryptionOptions.keyRing())",
        "Sources/RelayForwarding/DeadLetters/Pseudonymizer.swift":
            "reads or makes pseudonym.key on the forwarding store's executor (ForwardingStore.pseudonymizer())",
    ]

    /// Files that import the system's C library or Foundation for something else, and make no
    /// file-system call (checked below).
    static let otherSystemUsers: [String: String] = [
        "Sources/RelayCore/EventTime.swift": "clock and calendar functions",
        "Sources/RelayCore/SystemClock.swift": "clock_gettime",
        "Sources/RelayLog/LogLayout.swift": "path constants",
        "Sources/RelayLog/Encryption/SealedText.swift": "Data's base64 for sealed values",
        "Sources/RelayLog/Rewrite/SegmentRewriteLock.swift": "usleep between tries for the lock, on the log's or wal rekey's thread",
        "Sources/RelayForwarding/Uploader/TransportErrorText.swift": "strerror",
        "Sources/RelayLog/Erasure/ErasurePlan.swift": "JSONEncoder and JSONDecoder of the plan (its file goes through the FileSystem layer)",
        "Sources/RelayPostgres/Log/PostgresErasurePlans.swift": "JSONEncoder and JSONDecoder of the plan kept in a row",
        "Sources/RelayPrivacy/ErasureAuditLog.swift":
            "JSONEncoder and JSONDecoder of the records (erasures.jsonl goes through the FileSystem layer, on the erasure's executor and the erasure-audit one)",
        "Sources/CampaignRelay/Commands/EraseCommand.swift": "JSON of the request handed to a running server and of its answer",
        "Sources/RelayEventJSON/APIJSON.swift": "JSONEncoder",
        "Sources/RelayServer/ListenAddressCheck.swift": "a socket bind probe",
        "Sources/RelayServer/RelayServer.swift": "getpid",
        "Sources/RelayServer/Composition/RelayApplication.swift": "getpid, for server.json",
        "Sources/RelayServer/ConnectionBudget.swift": "getrlimit, setrlimit",
        "Sources/RelayServer/SystemdNotifier.swift": "sd_notify: one datagram that never waits (MSG_DONTWAIT)",
        "Sources/CampaignEmulator/CampaignEmulator.swift": "the wall clock",
        "Sources/CampaignEmulator/EmulatorJSON.swift": "JSONSerialization, HTTP dates",
        "Sources/CampaignRelay/Support/JSONLogHandler.swift": "JSONEncoder",
        "Sources/CampaignRelay/Support/CommandOptionCatalog.swift": "JSONDecoder of argument-parser's description of a command",
        "Sources/CampaignRelay/Support/ServerHandoff.swift": "JSON of the server's answers",
        "Sources/CampaignRelay/Support/UpstreamOptions.swift": "reading PEM options",
        "Sources/CampaignRelay/Support/ConfigurationValueCheck.swift": "trimming the parser's message (CharacterSet)",
        "Sources/CampaignRelay/Commands/WALRekeyCommand.swift": "JSONSerialization of the server's seal answer",
    ]

    @Test("only the files listed import the C library or Foundation, and only the file-system callers among them call it")
    func fileSystemCallsStayBehindTheBoundary() throws {
        // Without one of these imports a file cannot name open, pread, fsync, rename or FileManager at all.
        let systemImport = try Regex(#"^\s*(public |package )?import (Glibc|Darwin|Musl|Foundation|FoundationEssentials|SystemPackage)$"#)
        let lines = try Self.sourceLines()
        let importers = Set(lines.filter { $0.text.contains(systemImport) }.map(\.file))
        let listed = Set(Self.fileSystemCallers.keys).union(Self.otherSystemUsers.keys)
        #expect(
            importers.subtracting(listed).isEmpty, "not listed, yet importing the C library or Foundation: \(importers.subtracting(listed).sorted())")
        #expect(listed.subtracting(importers).isEmpty, "listed, but no longer importing them: \(listed.subtracting(importers).sorted())")
        let call = try Regex(
            #"(^|[^\w.])(open|openat|pread|pwrite|read|write|fsync|fdatasync|rename|unlink|mkdir|rmdir|opendir|readdir|ftruncate|flock|access|fopen|fstat|stat|lstat)\(|FileManager|Data\(contentsOf:|String\(contentsOf:"#
        )
        for line in lines where Self.otherSystemUsers[line.file] != nil && line.text.contains(call) {
            Issue.record("\(line.file):\(line.number) calls the file system directly: \(line.text)")
        }
        for file in Self.fileSystemCallers.keys {
            #expect(lines.contains { $0.file == file && $0.text.contains(call) }, "\(file) no longer calls the file system: take it off the list")
        }
    }

    /// The modules of the Campaign wire protocol: the protocol, and the SDK registration form it
    /// reads (a module of its own so that the log, which stores forms, needs no more of it).
    static let protocolModules = ["CampaignProtocol", "CampaignSDKForm"]

    @Test("the Campaign wire format lives in CampaignProtocol and CampaignSDKForm: no other library module spells it out")
    func wireFormatStaysInTheProtocolModule() throws {
        let wireDetails = ["jssp", "?id=h", "x-www-form-urlencoded", "additionalParameters", "<additionalParams", "\"mobileAppUuid\""]
        // The command-line tool's help texts describe the endpoints to people; they build nothing.
        // Nor does the OpenAPI document compiled into the server (docs/openapi.yaml, as text).
        let document = "Sources/RelayServer/Index/OpenAPIDocument"
        let checked = try Self.sourceLines().filter {
            !(Self.protocolModules + ["CampaignRelay"]).contains(Self.module($0.file)) && !$0.file.hasPrefix(document)
        }
        for line in checked {
            for detail in wireDetails where line.text.contains(detail) {
                Issue.record("\(line.file):\(line.number) spells out \(detail) of the wire format; use CampaignProtocol or CampaignSDKForm")
            }
        }
        let protocolLines = try Self.sourceLines().filter { Self.protocolModules.contains(Self.module($0.file)) }
        for detail in wireDetails where detail != "?id=h" {
            #expect(protocolLines.contains { $0.text.contains(detail) }, "CampaignProtocol or CampaignSDKForm should hold \(detail)")
        }
    }

    /// How a consumer outside RelayLog would build a reader of its own, beside the log's one read loop.
    static let privateReaders = ["LogReader", "reader(from:"]

    @Test("every consumer outside RelayLog reads through the log follower or the snapshot, never a LogReader of its own")
    func consumersReadThroughTheFollower() throws {
        let lines = try Self.sourceLines()
        // The rule must see the readers RelayLog builds, or it would pass on a walk that finds nothing.
        #expect(lines.contains { Self.module($0.file) == "RelayLog" && $0.text.contains("LogReader(") })
        #expect(lines.contains { Self.module($0.file) != "RelayLog" && $0.text.contains("LogFollower") })
        for line in lines where Self.module(line.file) != "RelayLog" {
            for spelling in Self.privateReaders where line.text.contains(spelling) {
                Issue.record(
                    "\(line.file):\(line.number) uses \(spelling): read through LogFollower (an open log) or StoredLog (a log not opened: files or a stream in PostgreSQL), see docs/seams/follow.md"
                )
            }
        }
    }

    /// The most lines a source file may have: a file past it holds more than one concern.
    static let longestSourceFile = 400

    @Test("no source file is over 400 lines (the generated OpenAPI document is cut into parts)")
    func sourceFilesStayShort() throws {
        let lengths = try Self.sourceFileLengths()
        #expect(lengths.count > 100, "the walk should find the sources")
        for (file, count) in lengths.sorted(by: { $0.key < $1.key }) where count > Self.longestSourceFile {
            Issue.record("\(file) has \(count) lines, over \(Self.longestSourceFile): split it by concern")
        }
    }

    /// Every source file's length as `wc -l` counts it (line breaks), by its path from the repository.
    static func sourceFileLengths() throws -> [String: Int] {
        let sources = repository.appendingPathComponent("Sources")
        guard let walker = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil) else { return [:] }
        var lengths: [String: Int] = [:]
        for case let url as URL in walker where url.pathExtension == "swift" {
            let text = try String(contentsOf: url, encoding: .utf8)
            lengths[String(url.path.dropFirst(repository.path.count + 1))] = text.utf8.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
        }
        return lengths
    }
}
