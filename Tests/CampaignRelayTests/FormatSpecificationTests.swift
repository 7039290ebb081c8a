import Foundation
import Testing

/// `docs/wal-format.md` is precise enough to decode the log in another language: its reference
/// Python decoder (run with the system's python3 and zlib) reads a real log exactly as `wal dump` does.
@Suite("The documented format decodes real segments")
struct FormatSpecificationTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("the reference decoder in docs/wal-format.md reads what ingest wrote")
    func pythonDecoderReadsTheLog() throws {
        let binary = try RelayBinary.path()
        let python = try #require(["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }, "python3 is needed")
        let specification = try String(contentsOf: Self.repository.appendingPathComponent("docs/wal-format.md"), encoding: .utf8)
        let decoder = try #require(specification.components(separatedBy: "```python\n").dropFirst().first?.components(separatedBy: "```").first)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spec-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = "\(directory)/decode.py"
        try decoder.write(toFile: script, atomically: true, encoding: .utf8)

        let ingest = try RelayBinary.run(binary, ["ingest", Self.repository.appendingPathComponent("examples/events.jsonl").path, "--data-dir", "\(directory)/data", "--json"])
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let decoded = try RelayBinary.run(python, [script, "\(directory)/data"])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let dump = try RelayBinary.run(binary, ["wal", "dump", "--data-dir", "\(directory)/data"])
        let dumped = dump.stdout.split(separator: "\n")
        let pythonLines = decoded.stdout.split(separator: "\n")
        #expect(pythonLines.count == dumped.count)
        #expect(pythonLines.count == 9)
        // Each decoded event names the same sequence, kind, ids and time instant as the dump.
        for (pythonLine, dumpLine) in zip(pythonLines, dumped) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(dumpLine.utf8)) as? [String: Any])
            let sequence = try #require(object["seq"] as? Int)
            #expect(pythonLine.hasPrefix("\(sequence) {'kind': '\(object["kind"] as? String ?? "")'"))
            for field in ["messageId", "deliveryId", "registrationToken", "integrationKey", "deviceName", "sdkForm"] {
                if let value = object[field] as? String { #expect(pythonLine.contains("'\(field)': '\(value)'") || pythonLine.contains("'\(field)': \"\(value)\"")) }
            }
        }
    }
}
