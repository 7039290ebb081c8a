import CampaignProtocol
import Foundation
import RelayCore
import RelayEventJSON
import RelayTestSupport
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the real `campaign-relay` executable: `ingest` then `wal dump` / `wal verify` give back
/// exactly what was ingested.
@Suite(.timeLimit(.minutes(10)), .tier(.fast))
struct IngestDumpRoundTripTests {
    // MARK: Running the executable

    /// What a run of the executable produced.
    struct Run: CustomStringConvertible {
        var status: Int32
        var stdout: String
        var stderr: String

        var description: String { "exit status \(status)\n--- stdout:\n\(stdout)\n--- stderr:\n\(stderr)" }
        var stdoutLines: [String] { stdout.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }
    }

    /// `campaign-relay`, built next to the test bundle.
    static func executable() throws -> URL {
        var directories: [URL] = []
        if let first = CommandLine.arguments.first {
            directories.append(URL(fileURLWithPath: first).resolvingSymlinksInPath().deletingLastPathComponent())
        }
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            directories.append(URL(fileURLWithPath: exe).deletingLastPathComponent())
        }
        directories.append(Bundle.main.bundleURL)
        directories.append(Bundle.main.bundleURL.deletingLastPathComponent())
        let candidates = directories.map { $0.appendingPathComponent("campaign-relay") }
        let found = candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
        return try #require(found, "campaign-relay not found in \(candidates.map(\.path))")
    }

    /// A fresh temporary directory, removed after `body`.
    static func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("campaign-relay-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        return try await body(directory)
    }

    /// Runs `campaign-relay arguments…` with `input` (or nothing) on standard input.
    static func run(_ arguments: [String], input: Data? = nil, scratch: URL) async throws -> Run {
        // Output goes to files: no pipe can fill up and block the child.
        let id = UUID().uuidString
        let outURL = scratch.appendingPathComponent("stdout-\(id)")
        let errURL = scratch.appendingPathComponent("stderr-\(id)")
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        let process = try SpawnedProcess(
            try executable().path, arguments, input: input == nil ? .nullDevice : .pipe, output: .file(outURL.path), error: .file(errURL.path))
        if let input, let writer = process.standardInput {
            // Small inputs only (well under a pipe's buffer), so this never blocks for long.
            _ = input.withUnsafeBytes { Glibc.write(writer, $0.baseAddress, $0.count) }
            close(writer)
        }
        // Waited for on a thread of its own, never on the cooperative pool.
        await withCheckedContinuation { continuation in
            Thread {
                process.waitUntilExit()
                continuation.resume()
            }.start()
        }
        let stdout = String(decoding: try Data(contentsOf: outURL), as: UTF8.self)
        let stderr = String(decoding: try Data(contentsOf: errURL), as: UTF8.self)
        return Run(status: process.terminationStatus, stdout: stdout, stderr: stderr)
    }

    // MARK: Comparing events

    /// A time no input uses, given to input lines without `time` when decoding them here.
    static let absentTime = EventTime(nanosecondsSinceEpoch: 7, utcOffsetMinutes: nil, fractionDigits: 9)

    /// A dumped line: its `seq`, and its event decoded from the other members.
    static func parseDumpLine(_ line: String) throws -> (sequence: UInt64, event: Event) {
        let value = try JSONParser.parse(line)
        guard case .object(let members) = value else {
            Issue.record("dump line is not an object: \(line)")
            throw EventInputError(field: nil, "not an object")
        }
        let first = try #require(members.first)
        #expect(first.name == "seq", "the first member of a dumped line is seq: \(line)")
        guard case .number(let literal) = first.value, let sequence = UInt64(literal) else {
            Issue.record("seq is not an unsigned integer: \(line)")
            throw EventInputError(field: "seq", "not a number")
        }
        #expect(!members.dropFirst().contains { $0.name == "seq" })
        let event = try EventDecoder.decode(.object(Array(members.dropFirst())), defaultTime: absentTime)
        return (sequence, event)
    }

    static func withTime(_ event: Event, _ time: EventTime) -> Event {
        switch event {
        case .tracking(var hit):
            hit.time = time
            return .tracking(hit)
        case .registration(var registration):
            registration.time = time
            return .registration(registration)
        case .erased(var entry):
            entry.time = time
            return .erased(entry)
        }
    }

    /// Checks that `dump` holds exactly `inputs`, in order, numbered from `firstSequence`.
    /// Inputs without a `time` must have been given a UTC millisecond time within `window`.
    static func expectDump(
        _ dump: [String], equals inputs: [String], firstSequence: UInt64 = 1, window: ClosedRange<Int64>,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        #expect(dump.count == inputs.count, "dump has \(dump.count) lines, expected \(inputs.count)", sourceLocation: sourceLocation)
        for (index, (dumped, input)) in zip(dump, inputs).enumerated() {
            let (sequence, event) = try parseDumpLine(dumped)
            #expect(sequence == firstSequence + UInt64(index), sourceLocation: sourceLocation)
            let expected = try EventDecoder.decode(input, defaultTime: absentTime)
            if expected.time == absentTime {
                let time = event.time
                #expect(window.contains(time.nanosecondsSinceEpoch), "default time \(time) outside the ingest run", sourceLocation: sourceLocation)
                #expect(time.utcOffsetMinutes == nil, sourceLocation: sourceLocation)
                #expect(time.fractionDigits == 3, sourceLocation: sourceLocation)
                #expect(time.nanosecondsSinceEpoch % 1_000_000 == 0, sourceLocation: sourceLocation)
                #expect(event == withTime(expected, time), "line \(index + 1): \(dumped)", sourceLocation: sourceLocation)
            } else {
                #expect(event == expected, "line \(index + 1): \(dumped)", sourceLocation: sourceLocation)
                // The dump writes the canonical form of the ingested event, byte for byte.
                #expect(dumped == EventEncoder.json(expected, sequence: sequence), sourceLocation: sourceLocation)
            }
        }
    }

    static func object(_ text: String) throws -> [String: JSONValue] {
        let value = try JSONParser.parse(text.trimmingCharacters(in: .whitespacesAndNewlines))
        guard case .object(let members) = value else {
            Issue.record("not a JSON object: \(text)")
            return [:]
        }
        return Dictionary(members.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    static func nowNanoseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1e9).rounded(.down))
    }

    // MARK: Inputs

    /// Every field of both kinds, every messageId form, aliases, offsets and fractions.
    static let everyField: [String] = [
        #"{"kind":"track","action":"impression","messageId":"55336","deliveryId":"f0190","integrationKey":"app-key_1","time":"2026-11-21T10:00:00Z"}"#,
        #"{"kind":"track","action":"open","_mId":"12345","_dId":"f0190","time":"2026-11-21T12:00:00.5+02:00"}"#,
        #"{"kind":"track","action":"click","messageId":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","deliveryId":"D-1.x_~","time":"2026-11-21T04:30:00.123456789-05:30"}"#,
        #"{"kind":"track","action":"open","messageId":"-1709416000","deliveryId":"f0190","integrationKey":"k","time":"2026-11-21t10:00:00.000z"}"#,
        #"{"kind":"track","action":"impression","_mId":"6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6","_dId":"abc","time":"1969-12-31T23:59:59.999Z"}"#,
        #"{"kind":"track","action":"click","_mId":"6b6499A8-9d43-4bc5-acf0-b6aeb96846f6","deliveryId":"0","time":"1900-01-01T00:00:00+14:00"}"#,
        #"{"kind":"track","action":"open","messageId":"007","_dId":"f0190","time":"2261-12-31T23:59:59.999999999Z"}"#,
        #"{"kind":"track","action":"impression","messageId":"-9223372036854775808","deliveryId":"x","time":"2026-11-21T10:00:00.1+00:00"}"#,
        #"{"kind":"track","action":"open","messageId":"-4294967297","deliveryId":"f0190"}"#,
        "",
        #"{"kind":"register","platform":"ios","integrationKey":"ios-key","registrationToken":"70757368546f6b656e","userKey":"","deviceName":"iPhone de Zoé","deviceModel":"iPhone15,2","deviceBrand":"Apple","deviceManufacturer":"Apple","osName":"iOS","osVersion":"iOS 17.2","osLanguage":"fr-FR","additionalParams":{"email":"email@email.com","userPoints":3233,"optIn":true},"time":"2026-11-21T11:00:00.25+01:00"}"#,
        #"{"kind":"register","platform":"android","integrationKey":"testIntegrationKey","registrationToken":"testToken","userKey":"testUser","deviceImei":"12345","deviceName":"mockDevice","deviceModel":"mockDeviceName","deviceBrand":"mockDeviceBrand","deviceManufacturer":"mockDeviceManufacturer","osName":"android","osVersion":"mockOSName mockOSVersion","osLanguage":"mocklocale","additionalParams":{"key":"value","z":1.5e3,"a":false,"n":-0.25,"s":""},"time":"2026-11-21T04:30:00.123-05:30"}"#,
        #"{"time":"2026-11-21T10:00:00.000001Z","additionalParams":{},"osVersion":"Android 14","deviceImei":"","registrationToken":"fcm:APA91b-x_y","integrationKey":"k","platform":"android","kind":"register"}"#,
        #"{"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t","deviceName":"quote \" backslash \\ newline \n tab \t nul \u0000 emoji \uD83D\uDE00","time":"2026-11-21T10:00:00Z"}"#,
        #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t"}"#,
    ]

    static func write(_ lines: [String], to url: URL) throws {
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: url)
    }

    // MARK: Tests

    @Test func ingestThenDumpGivesBackEveryField() async throws {
        try await Self.withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("events.jsonl")
            try Self.write(Self.everyField, to: file)
            let dataDir = directory.appendingPathComponent("data").path
            let inputs = Self.everyField.filter { !$0.isEmpty }

            let before = Self.nowNanoseconds() - 1_000_000
            let ingest = try await Self.run(["ingest", file.path, "--data-dir", dataDir, "--json"], scratch: directory)
            let after = Self.nowNanoseconds() + 1_000_000
            #expect(ingest.status == 0, "\(ingest)")
            let summary = try Self.object(ingest.stdout)
            #expect(summary["accepted"] == .number(String(inputs.count)), "\(ingest)")
            #expect(summary["rejected"] == .number("0"))
            #expect(summary["firstSequence"] == .number("1"))
            #expect(summary["lastSequence"] == .number(String(inputs.count)))
            #expect(summary["rejections"] == .array([]))
            #expect(summary["error"] == nil)
            #expect(summary["stoppedAtLine"] == nil)

            let dump = try await Self.run(["wal", "dump", "--data-dir", dataDir], scratch: directory)
            #expect(dump.status == 0, "\(dump)")
            #expect(dump.stderr == "", "\(dump)")
            #expect(dump.stdout.hasSuffix("\n"))
            try Self.expectDump(dump.stdoutLines, equals: inputs, window: before...after)

            // Exact text for a few lines: canonical names, canonical order, "seq" first, times as given
            // (lower-case separators come out upper-case).
            let lines = dump.stdoutLines
            try #require(lines.count == inputs.count)
            #expect(
                lines[1] == #"{"seq":2,"kind":"track","action":"open","messageId":"12345","deliveryId":"f0190","time":"2026-11-21T12:00:00.5+02:00"}"#
            )
            #expect(
                lines[3]
                    == #"{"seq":4,"kind":"track","action":"open","messageId":"-1709416000","deliveryId":"f0190","integrationKey":"k","time":"2026-11-21T10:00:00.000Z"}"#
            )
            #expect(
                lines[4]
                    == #"{"seq":5,"kind":"track","action":"impression","messageId":"6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6","deliveryId":"abc","time":"1969-12-31T23:59:59.999Z"}"#
            )
            #expect(
                lines[5]
                    == #"{"seq":6,"kind":"track","action":"click","messageId":"6b6499A8-9d43-4bc5-acf0-b6aeb96846f6","deliveryId":"0","time":"1900-01-01T00:00:00+14:00"}"#
            )
            #expect(
                lines[6]
                    == #"{"seq":7,"kind":"track","action":"open","messageId":"007","deliveryId":"f0190","time":"2261-12-31T23:59:59.999999999Z"}"#)
            #expect(lines[10] == "{\"seq\":11," + Self.everyField[11].dropFirst())
            #expect(
                lines[11]
                    == #"{"seq":12,"kind":"register","platform":"android","integrationKey":"k","registrationToken":"fcm:APA91b-x_y","deviceImei":"","osVersion":"Android 14","additionalParams":{},"time":"2026-11-21T10:00:00.000001Z"}"#
            )
            #expect(
                lines[12]
                    == #"{"seq":13,"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t","deviceName":"quote \" backslash \\ newline \n tab \t nul \u0000 emoji 😀","time":"2026-11-21T10:00:00Z"}"#
            )

            // The dump can be given back to ingest (without "seq") and dumps the same events again.
            let (_, reloaded) = try Self.parseDumpLine(lines[8])
            guard case .tracking(let hit) = reloaded else {
                Issue.record("line 9 should be a tracking event: \(lines[8])")
                return
            }
            #expect(hit.messageId.text == "-4294967297")
            #expect(hit.messageId.wireForm == "fffffffeffffffff")
        }
    }

    @Test func invalidLineIsReportedAndTheOthersAreStored() async throws {
        try await Self.withTemporaryDirectory { directory in
            let lines = [
                #"{"kind":"track","action":"impression","messageId":"55336","deliveryId":"f0190","time":"2026-11-21T10:00:00Z"}"#,
                #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","userKey":"","time":"2026-11-21T10:00:01Z"}"#,
                #"{"kind":"track","action":"open","messageId":"a8a","deliveryId":"f0190","time":"2026-11-21T10:00:02Z"}"#,
                #"{"kind":"track","action":"click","_mId":"12345","_dId":"f0190","time":"2026-11-21T10:00:03.5+01:00"}"#,
                #"{"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t","deviceImei":"1","additionalParams":{"a":1},"time":"2026-11-21T10:00:04Z"}"#,
            ]
            let file = directory.appendingPathComponent("events.jsonl")
            try Self.write(lines, to: file)
            let dataDir = directory.appendingPathComponent("data").path

            let ingest = try await Self.run(["ingest", file.path, "--data-dir", dataDir], scratch: directory)
            #expect(ingest.status == 2, "\(ingest)")
            let stderrLines = ingest.stderr.split(separator: "\n").map(String.init)
            #expect(stderrLines.contains(#"line 3: messageId "a8a" is neither a UUID nor a decimal integer"#), "\(ingest)")
            #expect(stderrLines.filter { $0.hasPrefix("line ") }.count == 1, "\(ingest)")
            #expect(ingest.stdout.hasPrefix("accepted 4 events (sequence 1 to 4), rejected 1 line, in "), "\(ingest)")

            let dump = try await Self.run(["wal", "dump", "--data-dir", dataDir], scratch: directory)
            #expect(dump.status == 0, "\(dump)")
            try Self.expectDump(dump.stdoutLines, equals: [lines[0], lines[1], lines[3], lines[4]], window: 0...0)

            // The JSON summary lists the rejection with its line, field and message.
            let second = directory.appendingPathComponent("data2").path
            let json = try await Self.run(["ingest", file.path, "--data-dir", second, "--json"], scratch: directory)
            #expect(json.status == 2, "\(json)")
            let summary = try Self.object(json.stdout)
            #expect(summary["accepted"] == .number("4"))
            #expect(summary["rejected"] == .number("1"))
            #expect(summary["firstSequence"] == .number("1"))
            #expect(summary["lastSequence"] == .number("4"))
            #expect(
                summary["rejections"]
                    == .array([
                        // Keys sorted, as every JSON answer of the relay (APIJSON).
                        .object([
                            JSONMember(name: "error", value: .string(#"messageId "a8a" is neither a UUID nor a decimal integer"#)),
                            JSONMember(name: "field", value: .string("messageId")),
                            JSONMember(name: "line", value: .number("3")),
                        ])
                    ]))
            #expect(!json.stderr.contains("line 3:"), "with --json rejections are in the summary only: \(json)")
        }
    }

    @Test func verifyAfterIngestReportsACleanLog() async throws {
        try await Self.withTemporaryDirectory { directory in
            let file = directory.appendingPathComponent("events.jsonl")
            try Self.write(Self.everyField, to: file)
            let dataDir = directory.appendingPathComponent("data").path
            let count = Self.everyField.filter { !$0.isEmpty }.count

            let ingest = try await Self.run(["ingest", file.path, "--data-dir", dataDir, "--json"], scratch: directory)
            #expect(ingest.status == 0, "\(ingest)")

            let verify = try await Self.run(["wal", "verify", "--data-dir", dataDir, "--json"], scratch: directory)
            #expect(verify.status == 0, "\(verify)")
            #expect(verify.stdout.contains(#""clean":true"#), "\(verify)")
            let report = try Self.object(verify.stdout)
            #expect(report["clean"] == .bool(true))
            #expect(report["events"] == .number(String(count)))
            #expect(report["firstSequence"] == .number("1"))
            #expect(report["lastSequence"] == .number(String(count)))
            #expect(report["corruptFrames"] == .number("0"))
            #expect(report["tornTails"] == .number("0"))
            #expect(report["missingSequences"] == .number("0"))
            #expect(report["segments"] == .number("1"))
            #expect(report["damage"] == .array([]))

            // A second ingest appends after the first; the log stays clean and counts both.
            let again = try await Self.run(["ingest", file.path, "--data-dir", dataDir, "--json"], scratch: directory)
            #expect(again.status == 0, "\(again)")
            let summary = try Self.object(again.stdout)
            #expect(summary["firstSequence"] == .number(String(count + 1)))
            #expect(summary["lastSequence"] == .number(String(2 * count)))
            let verifyAgain = try await Self.run(["wal", "verify", "--data-dir", dataDir, "--json"], scratch: directory)
            #expect(verifyAgain.status == 0, "\(verifyAgain)")
            let reportAgain = try Self.object(verifyAgain.stdout)
            #expect(reportAgain["clean"] == .bool(true))
            #expect(reportAgain["events"] == .number(String(2 * count)))
            #expect(reportAgain["lastSequence"] == .number(String(2 * count)))

            let text = try await Self.run(["wal", "verify", "--data-dir", dataDir], scratch: directory)
            #expect(text.status == 0, "\(text)")
            #expect(text.stdoutLines.contains("events:            \(2 * count)"), "\(text)")
            #expect(text.stdoutLines.last == "log is clean", "\(text)")
        }
    }

    /// A valid line longer than `--batch-bytes` is still one line: stored whole, and the lines after it
    /// keep their numbers (from a file and from standard input alike).
    @Test(arguments: [false, true])
    func lineLongerThanABatchStaysOneLine(fromStandardInput: Bool) async throws {
        try await Self.withTemporaryDirectory { directory in
            let longName = String(repeating: "x", count: 3000)
            let lines = [
                #"{"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","deviceName":"\#(longName)","time":"2026-11-21T10:00:00Z"}"#,
                #"{"kind":"track","action":"open","messageId":"1","deliveryId":"d","time":"2026-11-21T10:00:01Z"}"#,
                #"{"kind":"track","action":"open","messageId":"a8a","deliveryId":"d"}"#,
            ]
            let file = directory.appendingPathComponent("events.jsonl")
            try Self.write(lines, to: file)
            let dataDir = directory.appendingPathComponent("data").path
            let ingest =
                fromStandardInput
                ? try await Self.run(
                    ["ingest", "-", "--data-dir", dataDir, "--batch-bytes", "1024"], input: try Data(contentsOf: file), scratch: directory)
                : try await Self.run(["ingest", file.path, "--data-dir", dataDir, "--batch-bytes", "1024"], scratch: directory)
            #expect(ingest.status == 2, "\(ingest)")
            let rejections = ingest.stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix("line ") }
            #expect(rejections == [#"line 3: messageId "a8a" is neither a UUID nor a decimal integer"#], "\(ingest)")
            #expect(ingest.stdout.hasPrefix("accepted 2 events (sequence 1 to 2), rejected 1 line, in "), "\(ingest)")

            let dump = try await Self.run(["wal", "dump", "--data-dir", dataDir], scratch: directory)
            #expect(dump.status == 0, "\(dump)")
            try Self.expectDump(dump.stdoutLines, equals: [lines[0], lines[1]], window: 0...0)
        }
    }

    @Test func ingestFromStandardInput() async throws {
        try await Self.withTemporaryDirectory { directory in
            let lines = [
                #"{"kind":"track","action":"open","_mId":"55336","_dId":"f0190","time":"2026-11-21T12:00:00.5+02:00"}"#,
                #"{"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t","deviceImei":"35","additionalParams":{"b":true,"n":2,"s":"x"},"time":"2026-11-21T10:00:00Z"}"#,
                #"{"kind":"track","action":"impression","messageId":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","deliveryId":"f0190"}"#,
            ]
            let dataDir = directory.appendingPathComponent("data").path
            // CRLF line endings and no newline after the last line.
            let input = Data(lines.joined(separator: "\r\n").utf8)

            let before = Self.nowNanoseconds() - 1_000_000
            let ingest = try await Self.run(["ingest", "-", "--data-dir", dataDir, "--json"], input: input, scratch: directory)
            let after = Self.nowNanoseconds() + 1_000_000
            #expect(ingest.status == 0, "\(ingest)")
            let summary = try Self.object(ingest.stdout)
            #expect(summary["accepted"] == .number("3"), "\(ingest)")
            #expect(summary["rejected"] == .number("0"))
            #expect(summary["firstSequence"] == .number("1"))
            #expect(summary["lastSequence"] == .number("3"))

            // Without a file argument, standard input is read too.
            let implicit = try await Self.run(["ingest", "--data-dir", dataDir, "--json"], input: Data((lines[0] + "\n").utf8), scratch: directory)
            #expect(implicit.status == 0, "\(implicit)")
            let implicitSummary = try Self.object(implicit.stdout)
            #expect(implicitSummary["accepted"] == .number("1"))
            #expect(implicitSummary["firstSequence"] == .number("4"))
            #expect(implicitSummary["lastSequence"] == .number("4"))

            let dump = try await Self.run(["wal", "dump", "--data-dir", dataDir], scratch: directory)
            #expect(dump.status == 0, "\(dump)")
            try Self.expectDump(dump.stdoutLines, equals: lines + [lines[0]], window: before...after)
            #expect(
                dump.stdoutLines.first
                    == #"{"seq":1,"kind":"track","action":"open","messageId":"55336","deliveryId":"f0190","time":"2026-11-21T12:00:00.5+02:00"}"#)
            #expect(
                dump.stdoutLines.last
                    == #"{"seq":4,"kind":"track","action":"open","messageId":"55336","deliveryId":"f0190","time":"2026-11-21T12:00:00.5+02:00"}"#)

            // Standard input with a bad line 2: the line number counts from the start of the input.
            let bad = Data((lines[0] + "\n" + #"{"kind":"track","action":"open","messageId":"a8a","deliveryId":"f0190"}"# + "\n").utf8)
            let rejected = try await Self.run(["ingest", "-", "--data-dir", dataDir], input: bad, scratch: directory)
            #expect(rejected.status == 2, "\(rejected)")
            #expect(rejected.stderr.contains(#"line 2: messageId "a8a" is neither a UUID nor a decimal integer"#), "\(rejected)")
        }
    }
}
