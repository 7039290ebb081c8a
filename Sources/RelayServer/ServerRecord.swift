import Foundation

/// `<data-dir>/server.json`: how other commands on this machine reach the `serve` that holds the
/// data directory, so that `ingest`, `deadletter retry`, `aggregate`, `upload` and `stats` work
/// next to a running relay instead of failing on its lock.
///
/// Written atomically once the server listens, removed when it stops. A record left by a killed
/// server is ignored: it is only read when the log's lock is held, and its `pid` must be alive.
public struct ServerRecord: Codable, Sendable, Hashable {
    /// The server's process id.
    public var pid: Int32
    /// Where to reach it from this machine, e.g. `http://127.0.0.1:8080` (a wildcard bind is
    /// recorded as loopback).
    public var url: String
    /// Whether the server keeps the aggregates.
    public var aggregates: Bool
    /// Whether it forwards tracking hits and registrations (it has the hosts).
    public var forwardsTracking: Bool
    /// Whether it forwards registrations.
    public var forwardsRegistrations: Bool
    /// Whether it requires client certificates (`--tls-client-ca`): then commands cannot hand
    /// events over.
    public var requiresClientCertificate: Bool
    /// The relay's version.
    public var version: String
    /// Its `--archive-dir`, as an absolute path; `nil` without one (or in a record of a version
    /// before it was recorded).
    public var archiveDirectory: String?

    /// `path` as an absolute path without symbolic links, `.` or `..`, to compare directories
    /// two processes name from different working directories.
    public static func canonical(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }

    /// The record's path in `dataDirectory`.
    public static func path(dataDirectory: String) -> String { "\(dataDirectory)/server.json" }

    /// The record of the running server of `dataDirectory`, or `nil` when there is none (no file,
    /// an unreadable one, or one whose process is gone).
    public static func running(dataDirectory: String) -> ServerRecord? {
        guard let data = FileManager.default.contents(atPath: path(dataDirectory: dataDirectory)),
            let record = try? JSONDecoder().decode(ServerRecord.self, from: data), kill(record.pid, 0) == 0 || errno == EPERM
        else { return nil }
        return record
    }

    /// Writes the record (a temporary file renamed over it, so a reader never sees half of one).
    func write(dataDirectory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let path = Self.path(dataDirectory: dataDirectory)
        try encoder.encode(self).write(to: URL(fileURLWithPath: path + ".tmp"))
        guard rename(path + ".tmp", path) == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
    }

    /// Removes the record of this process (not one a newer server wrote).
    static func remove(dataDirectory: String, pid: Int32) {
        guard let data = FileManager.default.contents(atPath: path(dataDirectory: dataDirectory)),
            let record = try? JSONDecoder().decode(ServerRecord.self, from: data), record.pid == pid
        else { return }
        unlink(path(dataDirectory: dataDirectory))
    }
}
