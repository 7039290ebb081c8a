import Foundation
import Logging
import RelayCore

/// swift-log's handler for `--json`: one JSON object per line on standard error,
/// `{"time":…,"level":…,"label":…,"message":…,"metadata":{…},"source":…}`, for log shippers.
struct JSONLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .notice
    let label: String

    init(label: String) {
        self.label = label
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var line = "{\"time\":\"\(EventTime.now().rfc3339)\",\"level\":\"\(event.level.rawValue)\",\"label\":\(JSONText.quoted(label))"
        line += ",\"message\":\(JSONText.quoted("\(event.message)"))"
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        if !merged.isEmpty {
            line +=
                ",\"metadata\":{"
                + merged.sorted { $0.key < $1.key }.map { "\(JSONText.quoted($0.key)):\(JSONText.quoted("\($0.value)"))" }.joined(separator: ",")
                + "}"
        }
        line += ",\"source\":\(JSONText.quoted(event.source))}\n"
        // A line that cannot be written (standard error on a full disk, a closed pipe) is dropped:
        // `write(_:)` without `contentsOf:` traps on such an error, and logging must never stop the relay.
        try? FileHandle.standardError.write(contentsOf: Data(line.utf8))
    }
}
