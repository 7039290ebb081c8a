/// Keeps copies of damaged log bytes under `<data-dir>/quarantine/` with a note saying what they were.
///
/// Nothing is ever deleted without a copy: a torn tail is copied here before the segment is cut
/// back, and a corrupt frame is copied here while it stays in place (readers skip it). Copies are
/// named after the segment and offset, so the same damage seen twice is kept once.
public struct Quarantine: Sendable {
    /// The quarantine directory.
    public let directory: String
    let fileSystem: any FileSystem

    /// A quarantine in `directory`.
    public init(directory: String, fileSystem: any FileSystem) {
        self.directory = directory
        self.fileSystem = fileSystem
    }

    /// Copies `bytes` (the damaged range of `damage`) and a note, durably.
    ///
    /// Returns the path of the copy.
    @discardableResult
    public func keep(_ bytes: [UInt8], damage: LogDamage, now: String) throws(FileSystemError) -> String {
        try fileSystem.createDirectory(directory)
        let base = "\(directory)/\(damage.segment)@\(damage.range.lowerBound)"
        let note = """
            what: \(damage.kind.rawValue)
            segment: \(damage.segment)
            bytes: \(damage.range.lowerBound)..<\(damage.range.upperBound) (\(damage.range.count) bytes)
            reason: \(damage.reason)
            quarantined-at: \(now)

            """
        try fileSystem.writeAtomically(bytes, to: base + ".bin", directory: directory)
        try fileSystem.writeAtomically(Array(note.utf8), to: base + ".txt", directory: directory)
        return base + ".bin"
    }

    /// Copies the whole file `name` (its `bytes`), which could not be used, and a note, durably,
    /// under `name` and the time.
    ///
    /// Returns the path of the copy.
    @discardableResult
    public func keepFile(_ bytes: [UInt8], name: String, reason: String, now: String) throws(FileSystemError) -> String {
        try fileSystem.createDirectory(directory)
        let base = "\(directory)/\(name).\(now)"
        let note = """
            what: unreadable file
            file: \(name)
            reason: \(reason)
            quarantined-at: \(now)

            """
        try fileSystem.writeAtomically(bytes, to: base, directory: directory)
        try fileSystem.writeAtomically(Array(note.utf8), to: base + ".txt", directory: directory)
        return base
    }

    /// Whether this damage was already copied.
    public func contains(_ damage: LogDamage) -> Bool {
        fileSystem.exists("\(directory)/\(damage.segment)@\(damage.range.lowerBound).txt")
    }
}
