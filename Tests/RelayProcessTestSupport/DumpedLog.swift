import Foundation
import RelayLog
import RelayTestSupport
import Testing

/// A data directory's log as `wal dump` prints it (run without faults, after the faulty runs), and
/// the checks every fault test makes on it: each acknowledged event there exactly once, nothing
/// there that was never sent, and `wal verify` clean.
package struct DumpedLog {
    /// Message id of each event, in log order, with its sequence number.
    package var events: [(sequence: Int, messageId: String, line: [String: Any])]

    /// Declares, in the new log of `directory`, a consumer that never reads: its cursor stays at
    /// sequence 1, so the log keeps every segment (it deletes only what every cursor has passed)
    /// and `wal dump` can show every acknowledged event after `serve`'s aggregator has counted
    /// them. Called before the relay starts.
    package static func keepEverything(_ directory: String) async throws {
        let log = try await WriteAheadLog.open(dataDirectory: directory, consumers: [.cursorFile("fault-test-keeps-all")], logger: quietLogger)
        #expect(await log.cursorPosition("fault-test-keeps-all") == 1)
        await log.close()
    }

    /// Dumps the log of `directory` and checks it with `wal verify`.
    package static func read(_ binary: String, _ directory: String) async throws -> DumpedLog {
        let dump = try await BoundedRun.run(binary, ["wal", "dump", "--data-dir", directory], seconds: 120)
        try #require(dump.ending == .exited(0), "wal dump: \(dump.ending) \(dump.stderr)")
        let verify = try await BoundedRun.run(binary, ["wal", "verify", "--json", "--data-dir", directory], seconds: 120)
        #expect(verify.ending == .exited(0), "wal verify after the faults: \(verify.ending) \(verify.stdout) \(verify.stderr)")
        var events: [(Int, String, [String: Any])] = []
        for text in dump.stdout.split(separator: "\n") {
            let line = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not JSON: \(text)")
            events.append((line["seq"] as? Int ?? -1, line["messageId"] as? String ?? "", line))
        }
        return DumpedLog(events: events)
    }

    /// How many times each message id is in the log.
    package var occurrences: [String: Int] {
        events.reduce(into: [:]) { $0[$1.messageId, default: 0] += 1 }
    }

    /// Checks that every id of `acknowledged` is in the log exactly once, that no id is there twice,
    /// and that every id there was `sent`; records an issue naming a few offenders otherwise.
    package func check(acknowledged: Set<String>, sent: Set<String>, label: String) {
        let counts = occurrences
        let missing = acknowledged.filter { counts[$0] == nil }
        let twice = counts.filter { $0.value > 1 }.map(\.key)
        let invented = counts.keys.filter { !sent.contains($0) }
        #expect(missing.isEmpty, "\(label): \(missing.count) acknowledged events missing from the log, e.g. \(missing.sorted().prefix(5))")
        #expect(twice.isEmpty, "\(label): \(twice.count) events in the log more than once, e.g. \(twice.sorted().prefix(5))")
        #expect(invented.isEmpty, "\(label): \(invented.count) events in the log that were never sent, e.g. \(invented.sorted().prefix(5))")
        let sequences = events.map(\.sequence)
        #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count, "\(label): sequence numbers not strictly increasing")
    }
}
