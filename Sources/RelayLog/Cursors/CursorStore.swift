import RelayCore

/// Named, durable consumer positions in `<data-dir>/wal/cursors/<name>.cursor`.
///
/// A segment is deleted only when every cursor here has passed it. A damaged cursor file is
/// copied to the quarantine and reset to position 0 (read everything again), which errs on the
/// side of re-delivery, never of loss.
public struct CursorStore: Sendable {
    /// The cursor directory.
    public let directory: String
    let fileSystem: any FileSystem
    let quarantine: Quarantine

    /// A store in `directory`.
    public init(directory: String, fileSystem: any FileSystem, quarantine: Quarantine) {
        self.directory = directory
        self.fileSystem = fileSystem
        self.quarantine = quarantine
    }

    /// Checks a cursor name: 1 to 96 letters, digits, `-` or `_`.
    public static func validate(_ name: String) throws(LogError) {
        let ok =
            !name.isEmpty && name.utf8.count <= 96
            && name.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x5F
            }
        guard ok else { throw .invalidCursorName(name) }
    }

    func path(_ name: String) -> String { "\(directory)/\(name).cursor" }

    /// Every cursor's position, by name. Damaged files are quarantined and reset to 0; leftover
    /// temporary files of interrupted writes are removed.
    public func loadAll(now: String) throws(LogError) -> [String: UInt64] {
        var positions: [String: UInt64] = [:]
        let names: [String]
        do {
            try fileSystem.createDirectory(directory)
            names = try fileSystem.listDirectory(directory)
        } catch {
            throw .fileSystem(error, context: "listing cursors")
        }
        for file in names {
            if file.hasSuffix(".cursor.tmp") {
                do { try fileSystem.remove("\(directory)/\(file)") } catch { throw .fileSystem(error, context: "removing \(file)") }
                continue
            }
            guard file.hasSuffix(".cursor") else { continue }
            let name = String(file.dropLast(".cursor".count))
            guard (try? Self.validate(name)) != nil else { continue }
            let bytes: [UInt8]
            do { bytes = try fileSystem.readFile(path(name)) } catch { throw .fileSystem(error, context: "reading cursor \(name)") }
            if let cursor = CursorFile.decode(bytes) {
                positions[name] = cursor.position
            } else {
                let damage = LogDamage(
                    kind: .corruptFrame, segment: "cursor-\(name)", range: 0..<Int64(bytes.count), reason: "cursor file damaged; reset to 0")
                do {
                    try quarantine.keep(bytes, damage: damage, now: now)
                    try write(name, position: 0)
                } catch {
                    throw .fileSystem(error, context: "resetting damaged cursor \(name)")
                }
                positions[name] = 0
            }
        }
        return positions
    }

    /// Durably sets a cursor's position.
    public func write(_ name: String, position: UInt64) throws(FileSystemError) {
        let cursor = CursorFile(position: position, writtenAtNanoseconds: SystemClock.wallNanoseconds())
        try fileSystem.writeAtomically(cursor.encoded(), to: path(name), directory: directory)
    }
}
