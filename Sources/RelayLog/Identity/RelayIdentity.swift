import RelayCore

/// Who a data directory is, for relays that hand events to one another: a permanent relay id,
/// made the first time the directory's log is opened, and the epochs of its history.
///
/// An event's origin, across relays, is (relay id, epoch, sequence number in that relay's log).
/// The epoch changes when the directory turns out to be a copy: restored from a backup, or cloned
/// to a second machine. A copy's log may reuse sequence numbers the original already gave to
/// other events; under a new epoch, those events cannot be taken for the original's.
///
/// A copy is recognised by its directory: the identity records the device and inode of the data
/// directory it was made in, and a directory with other ones is a copy (`cp -a`, `rsync`, `tar`,
/// a restore to another disk or machine). A snapshot rolled back in place keeps its inode and is
/// not recognised. Stored in `<data-dir>/identity.json`, specified in `docs/relay-identity.md`.
public struct RelayIdentity: Sendable, Hashable {
    /// One epoch of the directory's history.
    public struct Epoch: Sendable, Hashable {
        /// 1 for the directory as first made, then one more for each copy.
        public var number: UInt32
        /// The first sequence number logged in this epoch.
        public var firstSequence: UInt64
        /// When it began (RFC 3339).
        public var started: String
        /// Why it began.
        public var reason: String

        /// An epoch from its parts.
        package init(number: UInt32, firstSequence: UInt64, started: String, reason: String) {
            self.number = number
            self.firstSequence = firstSequence
            self.started = started
            self.reason = reason
        }
    }

    /// The relay id: a random (version 4) UUID, in lower case.
    public var relayID: String
    /// The epochs, oldest first; never empty.
    public var epochs: [Epoch]
    /// The data directory the current epoch belongs to.
    public var directory: FileIdentity

    /// The current epoch.
    /// An identity from its parts: for a log kept elsewhere than a data directory (PostgreSQL's,
    /// whose stream row holds the relay id), `directory` is zero.
    package init(relayID: String, epochs: [Epoch], directory: FileIdentity) {
        self.relayID = relayID
        self.epochs = epochs
        self.directory = directory
    }

    public var epoch: Epoch { epochs[epochs.count - 1] }

    /// The epoch of the event logged at `sequence`.
    public func epochNumber(of sequence: UInt64) -> UInt32 {
        epochs.last { $0.firstSequence <= sequence }?.number ?? epochs[0].number
    }

    /// What opening the directory did to its identity.
    public enum Change: Sendable, Hashable {
        /// Nothing: the directory is the one the identity was made in.
        case unchanged
        /// A new identity for a new directory (or one whose log predates identities).
        case created
        /// The directory is a copy: a new epoch began.
        case newEpoch
        /// The identity file was unreadable (kept in quarantine): a new relay id was made.
        case recreated(reason: String)
    }

    /// The identity of the data directory of `layout`, made, or moved to a new epoch, as needed;
    /// `nextSequence` is the sequence number the log gives next. Runs where the log's lock is held.
    ///
    /// - Throws: ``LogError/fileSystem(_:context:)`` when the file cannot be read or written.
    static func establish(
        layout: LogLayout, fileSystem: any FileSystem, quarantine: Quarantine, nextSequence: UInt64, now: String
    ) throws(LogError) -> (RelayIdentity, Change) {
        let path = layout.identityFile
        let directory: FileIdentity
        do {
            directory = try fileSystem.fileIdentity(layout.dataDirectory)
        } catch {
            throw .fileSystem(error, context: "reading the identity of \(layout.dataDirectory)")
        }
        var change = Change.created
        var identity: RelayIdentity
        if fileSystem.exists(path) {
            let bytes: [UInt8]
            do {
                bytes = try fileSystem.readFile(path)
            } catch {
                throw .fileSystem(error, context: "reading \(path)")
            }
            switch parse(bytes) {
            case .success(let stored):
                identity = stored
                if stored.directory == directory { return (stored, .unchanged) }
                identity.epochs.append(
                    Epoch(
                        number: stored.epoch.number + 1, firstSequence: nextSequence, started: now,
                        reason: "the data directory is a copy (device \(directory.device), inode \(directory.inode); "
                            + "the identity was made in device \(stored.directory.device), inode \(stored.directory.inode))"
                    ))
                identity.directory = directory
                change = .newEpoch
            case .failure(let problem):
                do {
                    try quarantine.keepFile(bytes, name: "identity.json", reason: "unreadable relay identity: \(problem)", now: now)
                } catch {
                    throw .fileSystem(error, context: "keeping the unreadable \(path) in quarantine")
                }
                let first = Epoch(number: 1, firstSequence: nextSequence, started: now, reason: "made anew: the identity file was unreadable")
                identity = RelayIdentity(relayID: Self.newRelayID(), epochs: [first], directory: directory)
                change = .recreated(reason: problem.description)
            }
        } else {
            // A log older than identities gets one covering all its events.
            identity = RelayIdentity(
                relayID: Self.newRelayID(), epochs: [Epoch(number: 1, firstSequence: 1, started: now, reason: "first opened")], directory: directory)
        }
        do {
            try fileSystem.writeAtomically(Array(identity.json.utf8), to: path, directory: layout.dataDirectory)
        } catch {
            throw .fileSystem(error, context: "writing \(path)")
        }
        return (identity, change)
    }

    /// The identity of `dataDirectory`, made when it has none (``establish(layout:fileSystem:quarantine:nextSequence:now:)``):
    /// a relay whose log is kept elsewhere (PostgreSQL) still names its stream by its relay id.
    /// Blocking: call it on a thread made for blocking calls.
    ///
    /// - Throws: ``LogError/fileSystem(_:context:)`` when the directory or file cannot be made.
    package static func establish(dataDirectory: String, fileSystem: any FileSystem = PosixFileSystem()) throws(LogError) -> RelayIdentity {
        let layout = LogLayout(dataDirectory: dataDirectory)
        do {
            try fileSystem.createDirectory(dataDirectory)
        } catch {
            throw .fileSystem(error, context: "making the data directory \(dataDirectory)")
        }
        let quarantine = Quarantine(directory: layout.quarantineDirectory, fileSystem: fileSystem)
        return try establish(layout: layout, fileSystem: fileSystem, quarantine: quarantine, nextSequence: 1, now: EventTime.now().rfc3339).0
    }

    /// Reads the identity of `dataDirectory` without making or changing it (`wal verify`); `nil`
    /// when there is none or it is unreadable.
    public static func read(dataDirectory: String, fileSystem: any FileSystem = PosixFileSystem()) -> RelayIdentity? {
        guard let bytes = try? fileSystem.readFile(LogLayout(dataDirectory: dataDirectory).identityFile) else { return nil }
        return try? parse(bytes).get()
    }

    /// A version 4 UUID from the system's random generator.
    package static func newRelayID() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for (index, byte) in bytes.enumerated() {
            if [4, 6, 8, 10].contains(index) { text.append(UInt8(ascii: "-")) }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
