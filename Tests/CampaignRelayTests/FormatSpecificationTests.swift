import Foundation
import RelayCore
import RelayEventJSON
import RelayLog
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// `docs/wal-format.md` is precise enough to decode the log in another language: its reference
/// Python decoder (run with the system's python3 and zlib) reads a real log exactly as `wal dump` does.
@Suite("The documented format decodes real segments", .tier(.fast))
struct FormatSpecificationTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("the reference decoder in docs/wal-format.md reads what ingest wrote")
    func pythonDecoderReadsTheLog() async throws {
        let binary = try RelayBinary.path()
        let python = try #require(
            ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }, "python3 is needed")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spec-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = try Self.writeReferenceDecoder(into: directory)

        let ingest = try await RelayBinary.run(
            binary, ["ingest", Self.repository.appendingPathComponent("examples/events.jsonl").path, "--data-dir", "\(directory)/data", "--json"])
        #expect(ingest.status == 0, "\(ingest.stderr)")
        // Entries the examples do not hold: a copy (tag 4), an event of a keyed request (tag 5), both,
        // and events handed on by other relays (tag 6), with and without a hop, one of them a copy.
        let wrapped = """
            {"kind":"track","action":"open","messageId":"77","deliveryId":"f1","time":"2026-11-21T10:00:00Z","origin":{"sequence":2}}
            {"kind":"track","action":"click","messageId":"78","deliveryId":"f1","time":"2026-11-21T10:00:01.5+01:00","request":{"key":"order-42 é","index":0}}
            {"kind":"register","platform":"ios","integrationKey":"k","registrationToken":"t","time":"2026-11-21T10:00:02Z","origin":{"sequence":3},"request":{"key":"order-42 é","index":300}}
            {"kind":"track","action":"impression","messageId":"79","deliveryId":"f1","time":"2026-11-21T10:00:03Z","relayOrigin":{"relayId":"598ef5b4-921c-4ba5-b8e1-ef71a5e2a510","epoch":2,"sequence":1000000007}}
            {"kind":"track","action":"open","messageId":"80","deliveryId":"f1","time":"2026-11-21T10:00:04Z","origin":{"sequence":1},"relayOrigin":{"relayId":"598ef5b4-921c-4ba5-b8e1-ef71a5e2a510","epoch":2,"sequence":8},"relayHop":{"relayId":"0b6a1c1e-7f43-4d7e-9a51-2f1c8d3e4b5a","epoch":1,"sequence":42}}

            """
        try wrapped.write(toFile: "\(directory)/wrapped.jsonl", atomically: true, encoding: .utf8)
        let ingestWrapped = try await RelayBinary.run(binary, ["ingest", "\(directory)/wrapped.jsonl", "--data-dir", "\(directory)/data", "--json"])
        #expect(ingestWrapped.status == 0, "\(ingestWrapped.stderr)")
        // Events of tenants (tag 7): one alone, one with every other wrapper inside. `ingest` takes
        // only tenants a configuration declares, so they are appended through the library.
        let tenanted = """
            {"kind":"track","action":"open","messageId":"81","deliveryId":"f1","time":"2026-11-21T10:00:05Z","tenant":"brand-a"}
            {"kind":"register","platform":"android","integrationKey":"k","registrationToken":"t2","time":"2026-11-21T10:00:06Z","origin":{"sequence":4},"request":{"key":"r","index":1},"relayOrigin":{"relayId":"598ef5b4-921c-4ba5-b8e1-ef71a5e2a510","epoch":2,"sequence":9},"tenant":"b-2"}
            """
        let tenantEvents = try tenanted.split(separator: "\n").map {
            try EventDecoder.decode(String($0), defaultTime: EventTime(nanosecondsSinceEpoch: 0))
        }
        let log = try await WriteAheadLog.open(dataDirectory: "\(directory)/data")
        _ = try await log.append(tenantEvents)
        await log.close()
        let decoded = try await RelayBinary.run(python, [script, "\(directory)/data"])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", "\(directory)/data"])
        let dumped = dump.stdout.split(separator: "\n")
        let pythonLines = decoded.stdout.split(separator: "\n")
        #expect(pythonLines.count == dumped.count)
        #expect(dumped.filter { $0.contains(#""request":{"key":"order-42 é","index":300}"#) }.count == 1, "the dump prints the request identity")
        #expect(pythonLines.count == 16)
        #expect(dumped.filter { $0.contains(#""tenant":"b-2""#) && $0.contains(#""relayOrigin""#) }.count == 1, "the dump prints the tenant")
        try Self.expectSameEvents(python: pythonLines, dump: dumped)
        #expect(dumped.filter { $0.contains(#""relayHop":{"relayId":"0b6a1c1e-7f43-4d7e-9a51-2f1c8d3e4b5a","epoch":1,"sequence":42}"#) }.count == 1)
    }

    @Test("the reference decoder in docs/wal-format.md opens a log encrypted with two keys, among plain frames")
    func pythonDecoderReadsAnEncryptedLog() async throws {
        let binary = try RelayBinary.path()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spec-encrypted-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = try Self.writeReferenceDecoder(into: directory)
        let data = "\(directory)/data"
        let events = Self.repository.appendingPathComponent("examples/events.jsonl").path

        // Two keys. The file of both has what the format allows: comments, a blank line, a key
        // without its base64 padding.
        let (oldKey, newKey) = (Data(TestKeys.bytes("old")).base64EncodedString(), Data(TestKeys.bytes("new")).base64EncodedString())
        let oneKey = "\(directory)/one.keys"
        let twoKeys = "\(directory)/two.keys"
        try Self.writeKeyFile(oneKey, "# the first key only\nold-1:\(oldKey)\n")
        try Self.writeKeyFile(
            twoKeys, "# keys of the log, newest last\n\nold-1:\(oldKey)\nnew-2:\(newKey.replacingOccurrences(of: "=", with: ""))   # newest\n")

        // A log written in the clear, then sealed with the first key, then with the second (one
        // frame of it stored uncompressed): one segment holding every kind of frame.
        for arguments in [
            [], ["--encryption-key-file", oneKey], ["--encryption-key-file", twoKeys, "--compression-level", "0"],
            ["--encryption-key-file", twoKeys],
        ] {
            let ingest = try await RelayBinary.run(binary, ["ingest", events, "--data-dir", data, "--json"] + arguments)
            #expect(ingest.status == 0, "ingest \(arguments): \(ingest.stderr)")
        }
        let segments = try FileManager.default.contentsOfDirectory(atPath: "\(data)/wal").filter { $0.hasSuffix(".wal") }
        #expect(segments.count == 1)
        let frames = try segments.flatMap { try Self.frameKinds(segment: "\(data)/wal/\($0)") }
        #expect(frames == ["plain zlib", "old-1 zlib", "new-2 stored", "new-2 zlib"], "the frames: \(frames)")

        // python3 as .ci/run installs `cryptography` into it.
        let decoded = try await RelayBinary.run("/usr/bin/env", ["python3", script, data, twoKeys])
        try #require(
            !decoded.stderr.contains("No module named 'cryptography'"),
            "the reference decoder opens encrypted frames with cryptography: python3 -m pip install cryptography==48.0.0 (.ci/run installs it)")
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", data, "--encryption-key-file", twoKeys])
        #expect(dump.status == 0, "\(dump.stderr)")
        let pythonLines = decoded.stdout.split(separator: "\n")
        let dumped = dump.stdout.split(separator: "\n")
        #expect(pythonLines.count == 36)
        #expect(pythonLines.count == dumped.count)
        try Self.expectSameEvents(python: pythonLines, dump: dumped)

        // Without a key a frame names, both stop there, naming it.
        let withoutNewest = try await RelayBinary.run("/usr/bin/env", ["python3", script, data, oneKey])
        #expect(withoutNewest.status != 0 && withoutNewest.stderr.contains("new-2"), "\(withoutNewest.stderr)")
        let withoutKeys = try await RelayBinary.run("/usr/bin/env", ["python3", script, data])
        #expect(withoutKeys.status != 0 && withoutKeys.stderr.contains("old-1"), "\(withoutKeys.stderr)")
        let dumpWithoutNewest = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", data, "--encryption-key-file", oneKey])
        #expect(dumpWithoutNewest.status != 0 && dumpWithoutNewest.stderr.contains("new-2"), "\(dumpWithoutNewest.stderr)")
    }

    /// Writes the ```python block of `docs/wal-format.md` to `directory`/decode.py and returns its path.
    static func writeReferenceDecoder(into directory: String) throws -> String {
        let specification = try String(contentsOf: repository.appendingPathComponent("docs/wal-format.md"), encoding: .utf8)
        let decoder = try #require(specification.components(separatedBy: "```python\n").dropFirst().first?.components(separatedBy: "```").first)
        let script = "\(directory)/decode.py"
        try decoder.write(toFile: script, atomically: true, encoding: .utf8)
        return script
    }

    /// Creates a key file readable by its owner alone, as the relay requires.
    static func writeKeyFile(_ path: String, _ text: String) throws {
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }

    /// Each frame of a segment as "plain" or its key id, then its codec, read from the bytes as
    /// the document describes them (header flag bit 0, the envelope's key id).
    static func frameKinds(segment path: String) throws -> [String] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        func u32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
        var kinds: [String] = []
        var offset = 32
        while offset + 36 <= bytes.count, bytes[offset..<(offset + 4)].elementsEqual("CRWF".utf8) {
            let codec = bytes[offset + 5] == 0 ? "stored" : "zlib"
            let flags = Int(bytes[offset + 6]) | Int(bytes[offset + 7]) << 8
            if flags & 1 != 0 {
                let length = Int(bytes[offset + 36])
                kinds.append("\(String(decoding: bytes[(offset + 37)..<(offset + 37 + length)], as: UTF8.self)) \(codec)")
            } else {
                kinds.append("plain \(codec)")
            }
            offset += 36 + u32(offset + 24)
        }
        return kinds
    }

    /// Every field of every event the reference decoder printed equals what `wal dump` says.
    static func expectSameEvents(python pythonLines: [Substring], dump dumped: [Substring]) throws {
        for (pythonLine, dumpLine) in zip(pythonLines, dumped) {
            let python = try #require(try JSONSerialization.jsonObject(with: Data(pythonLine.utf8)) as? [String: Any], "\(pythonLine)")
            let dump = try #require(try JSONSerialization.jsonObject(with: Data(dumpLine.utf8)) as? [String: Any])
            let context = "sequence \(dump["seq"] ?? "?")"
            #expect(python["seq"] as? Int == dump["seq"] as? Int, "\(context)")
            #expect(python["kind"] as? String == dump["kind"] as? String, "\(context)")
            #expect(python["tenant"] as? String == dump["tenant"] as? String, "\(context): tenant")
            let textFields =
                ["action", "messageId", "deliveryId", "integrationKey", "platform", "registrationToken", "sdkForm"]
                + ["userKey", "deviceImei", "deviceName", "deviceModel", "deviceBrand", "deviceManufacturer", "osName", "osVersion", "osLanguage"]
            for field in textFields where dump[field] != nil || !(python[field] is NSNull || python[field] == nil) {
                if dump["sdkForm"] != nil, field != "sdkForm", field != "platform" { continue }  // read from the form, not in the dump
                #expect(
                    python[field] as? String == dump[field] as? String, "\(context): \(field) \(python[field] ?? "nil") vs \(dump[field] ?? "nil")")
            }
            // The time: the same instant, offset and fraction digits.
            let time = try EventTime(rfc3339: try #require(dump["time"] as? String), field: "time")
            let pythonTime = try #require(python["time"] as? [String: Any])
            #expect((pythonTime["nanos"] as? NSNumber)?.int64Value == time.nanosecondsSinceEpoch, "\(context): time")
            #expect(pythonTime["fractionDigits"] as? Int == Int(time.fractionDigits), "\(context): fraction digits")
            #expect(pythonTime["offsetMinutes"] as? Int == time.utcOffsetMinutes.map(Int.init), "\(context): UTC offset")
            // additionalParams: names in order, strings and number literals as text, booleans as booleans.
            if let params = dump["additionalParams"] {
                let pairs = try #require(python["additionalParams"] as? [[Any]], "\(context): additionalParams")
                let ordered = Self.orderedParams(dumpLine)
                #expect(pairs.map { $0.first as? String ?? "" } == ordered.map(\.name), "\(context): parameter names \(params)")
                for (pair, expected) in zip(pairs, ordered) {
                    let value = pair.count > 1 ? pair[1] : NSNull()
                    if let flag = expected.bool {
                        #expect((value as? Bool) == flag, "\(context): \(expected.name)")
                    } else {
                        #expect((value as? String) == expected.text, "\(context): \(expected.name) \(value) vs \(expected.text)")
                    }
                }
            } else {
                #expect(python["additionalParams"] == nil, "\(context)")
            }
            #expect(
                ((python["origin"] as? [String: Any])?["sequence"] as? Int) == ((dump["origin"] as? [String: Any])?["sequence"] as? Int),
                "\(context): origin")
            let pythonRequest = python["request"] as? [String: Any]
            let dumpRequest = dump["request"] as? [String: Any]
            #expect((pythonRequest == nil) == (dumpRequest == nil), "\(context): request")
            #expect(pythonRequest?["key"] as? String == dumpRequest?["key"] as? String, "\(context): request key")
            #expect(pythonRequest?["index"] as? Int == dumpRequest?["index"] as? Int, "\(context): request index")
            for field in ["relayOrigin", "relayHop"] {
                let pythonPosition = python[field] as? [String: Any]
                let dumpPosition = dump[field] as? [String: Any]
                #expect((pythonPosition == nil) == (dumpPosition == nil), "\(context): \(field)")
                #expect(pythonPosition?["relayId"] as? String == dumpPosition?["relayId"] as? String, "\(context): \(field) relay id")
                #expect(pythonPosition?["epoch"] as? Int == dumpPosition?["epoch"] as? Int, "\(context): \(field) epoch")
                #expect(
                    (pythonPosition?["sequence"] as? NSNumber)?.uint64Value == (dumpPosition?["sequence"] as? NSNumber)?.uint64Value,
                    "\(context): \(field) sequence")
            }
        }
    }

    /// The `additionalParams` of a dumped line in their order, values as their JSON text
    /// (strings unquoted), booleans apart.
    static func orderedParams(_ line: Substring) -> [(name: String, text: String, bool: Bool?)] {
        guard case .object(let members)? = try? JSONParser.parse(String(line)),
            case .object(let params)? = members.first(where: { $0.name == "additionalParams" })?.value
        else { return [] }
        return params.map { member in
            switch member.value {
            case .string(let text): (member.name, text, nil)
            case .number(let literal): (member.name, literal, nil)
            case .bool(let flag): (member.name, "", flag)
            default: (member.name, "", nil)
            }
        }
    }
}
