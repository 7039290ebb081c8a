import Foundation
public import RelayIO

#if canImport(Glibc)
    import Glibc
#endif

/// `<data-dir>/erasures.jsonl`: one ``ErasureReport`` per finished erasure, as a line of JSON,
/// appended and fdatasync'ed before the erasure's plan is removed. It holds no personal data.
/// `erase --list` and `GET /v1/privacy/erasures` read it.
public enum ErasureAuditLog {
    /// The audit log of a data directory.
    public static func path(dataDirectory: String) -> String { "\(dataDirectory)/erasures.jsonl" }

    /// Every record, oldest first (none when the file does not exist). It reads a file: call it on
    /// a thread made for blocking calls.
    ///
    /// - Throws: ``ErasureError/audit(_:)`` when the file cannot be read or a line does not decode.
    public static func records(dataDirectory: String) throws(ErasureError) -> [ErasureReport] {
        let path = path(dataDirectory: dataDirectory)
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        var records: [ErasureReport] = []
        for (number, line) in data.split(separator: UInt8(ascii: "\n")).enumerated() where !line.isEmpty {
            do {
                records.append(try JSONDecoder().decode(ErasureReport.self, from: Data(line)))
            } catch {
                // A line cut short by a crash while it was appended: that erasure's plan is still
                // there, and finishing it appends its record again.
                if number == data.split(separator: UInt8(ascii: "\n")).count - 1, data.last != UInt8(ascii: "\n") { continue }
                throw .audit("\(path) line \(number + 1) is not a record (\(error)); move the file away to start a new audit log")
            }
        }
        return records
    }

    /// ``records(dataDirectory:)`` read on `executor`.
    public static func records(dataDirectory: String, on executor: BlockingExecutor) async throws(ErasureError) -> [ErasureReport] {
        try await executor.run { () throws(ErasureError) -> [ErasureReport] in try records(dataDirectory: dataDirectory) }
    }

    /// Appends `report` and syncs it, unless a record of its id is there already.
    ///
    /// - Throws: ``ErasureError/audit(_:)`` when it cannot be written.
    static func append(_ report: ErasureReport, dataDirectory: String) throws(ErasureError) {
        if try records(dataDirectory: dataDirectory).contains(where: { $0.id == report.id }) { return }
        let path = path(dataDirectory: dataDirectory)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var line: [UInt8]
        do { line = Array(try encoder.encode(report)) } catch { throw .audit("encoding the record of erasure \(report.id): \(error)") }
        line.append(UInt8(ascii: "\n"))
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .audit("cannot open \(path): \(String(cString: strerror(errno))); check that the data directory is writable")
        }
        defer { close(descriptor) }
        // A torn last line (a crash mid-append) is skipped by `records`: start on a line of our own.
        if let data = FileManager.default.contents(atPath: path), let last = data.last, last != UInt8(ascii: "\n") {
            line.insert(UInt8(ascii: "\n"), at: 0)
        }
        let written = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == line.count, fdatasync(descriptor) == 0 else {
            throw .audit("cannot append to \(path): \(String(cString: strerror(errno))); the erasure finishes at the next start")
        }
    }
}
