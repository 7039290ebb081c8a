import Foundation
public import RelayIO
public import RelayLog

/// `<data-dir>/erasures.jsonl`: one ``ErasureReport`` per finished erasure, as a line of JSON,
/// appended and fdatasync'ed before the erasure's plan is removed. It holds no personal data.
/// `erase --list` and `GET /v1/privacy/erasures` read it.
public enum ErasureAuditLog {
    /// The audit log of a data directory.
    public static func path(dataDirectory: String) -> String { "\(dataDirectory)/erasures.jsonl" }

    /// Every record, oldest first (none when the file does not exist), read through `fileSystem`.
    /// It reads a file: call it on a thread made for blocking calls.
    ///
    /// - Throws: ``ErasureError/audit(_:)`` when the file cannot be read or a line does not decode.
    public static func records(dataDirectory: String, fileSystem: any FileSystem = PosixFileSystem()) throws(ErasureError) -> [ErasureReport] {
        let path = path(dataDirectory: dataDirectory)
        return try parse(try contents(of: path, fileSystem: fileSystem), path: path).records
    }

    /// ``records(dataDirectory:fileSystem:)`` read on `executor`.
    public static func records(dataDirectory: String, on executor: BlockingExecutor) async throws(ErasureError) -> [ErasureReport] {
        try await executor.run { () throws(ErasureError) -> [ErasureReport] in try records(dataDirectory: dataDirectory) }
    }

    /// The bytes of the audit log at `path`; none when it does not exist.
    private static func contents(of path: String, fileSystem: any FileSystem) throws(ErasureError) -> [UInt8] {
        do {
            return try fileSystem.readFile(path)
        } catch  where error.errno == ENOENT {
            return []
        } catch {
            throw .audit("cannot read \(path): \(error.reason); move it away to start a new audit log")
        }
    }

    /// The records of `data`, the audit log's bytes, and how many of its bytes hold them.
    ///
    /// A record is a line that decodes and ends with its newline. What follows the last record,
    /// when no record follows it, is an append a power loss cut short (the one write not synced:
    /// each append is synced before the next begins): its sectors may be missing, zeros or
    /// garbage, newlines among them. Readers skip it, and the next append cuts it off; that
    /// erasure's plan is still there, and finishing it appends its record again.
    private static func parse(_ data: [UInt8], path: String) throws(ErasureError) -> (records: [ErasureReport], length: Int) {
        var records: [ErasureReport] = []
        var length = 0
        var damaged: (line: Int, reason: String)?
        var start = 0
        var number = 0
        while start < data.count {
            let newline = data[start...].firstIndex(of: UInt8(ascii: "\n"))
            let end = newline ?? data.count
            number += 1
            defer { start = end + 1 }
            guard end > start else { continue }
            var record: ErasureReport?
            var reason = "no newline at its end"
            if newline != nil {
                do { record = try JSONDecoder().decode(ErasureReport.self, from: Data(data[start..<end])) } catch { reason = "\(error)" }
            }
            guard let record else {
                if damaged == nil { damaged = (number, reason) }
                continue
            }
            // A record after damage: the damage is not an append cut short.
            if let damaged {
                throw .audit("\(path) line \(damaged.line) is not a record (\(damaged.reason)); move the file away to start a new audit log")
            }
            records.append(record)
            length = end + 1
        }
        return (records, length)
    }

    /// Appends `report` through `fileSystem` and syncs it, unless a record of its id is there
    /// already; an append a power loss cut short is cut off first. The file is made with mode 0600,
    /// and the data directory synced then, so that its name is as durable as the record.
    ///
    /// - Throws: ``ErasureError/audit(_:)`` when it cannot be written.
    static func append(_ report: ErasureReport, dataDirectory: String, fileSystem: any FileSystem = PosixFileSystem()) throws(ErasureError) {
        let path = path(dataDirectory: dataDirectory)
        let existing = try contents(of: path, fileSystem: fileSystem)
        let (records, length) = try parse(existing, path: path)
        if records.contains(where: { $0.id == report.id }) { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var line: [UInt8]
        do { line = Array(try encoder.encode(report)) } catch { throw .audit("encoding the record of erasure \(report.id): \(error)") }
        line.append(UInt8(ascii: "\n"))
        let isNew = !fileSystem.exists(path)
        let handle: any RelayLog.FileHandle
        do throws(FileSystemError) {
            handle = try fileSystem.openForAppending(path, mode: 0o600)
        } catch {
            throw .audit("cannot open \(path): \(error.reason); check that the data directory is writable")
        }
        defer { handle.close() }
        do throws(FileSystemError) {
            if length < existing.count { try handle.truncate(to: Int64(length)) }
            try handle.write(line, at: Int64(length))
            try handle.synchronizeData()
            if isNew { try fileSystem.synchronizeDirectory(dataDirectory) }
        } catch {
            throw .audit("cannot append to \(path): \(error.reason); the erasure finishes at the next start")
        }
    }
}
