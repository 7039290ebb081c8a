import Foundation
public import RelayCore

/// What an erasure will do, written to `<data-dir>/wal/erasure-<id>.plan` before it changes
/// anything and removed once it is done: a restart (or the next `erase`) finds an erasure a crash
/// cut short and finishes it from its plan, and every reader masks its registrations meanwhile
/// (``ErasureMask``).
///
/// It holds no personal data: sequence numbers, apps, and the SHA-256 of each token (the form the
/// forwarding store and the aggregates keep it in, so that their rows can be found), nothing of
/// the selector but its keyed hash. Its format is in `docs/privacy.md`.
public struct ErasurePlan: Sendable, Hashable, Codable {
    /// One registration to erase.
    public struct Target: Sendable, Hashable, Codable {
        /// Its sequence number in the log.
        public var sequence: UInt64
        /// Its tenant's stored name (`""`: the default tenant).
        public var tenant: String
        /// Its app and platform: the row of the aggregates that counted it.
        public var integrationKey: String
        /// `ios` or `android`.
        public var platform: String
        /// SHA-256 of its push token, lower-case hex (``TokenDigest``).
        public var tokenDigest: String
        /// When it happened (nanoseconds since the Unix epoch).
        public var timeNanoseconds: Int64
        /// The relay that took it first, and the one that handed it on, when another relay did.
        public var originRelayId: String?
        /// The relay that handed it on between its origin and this one, in a chain of three or more.
        public var viaRelayId: String?
        /// Whether the uploader had sent it to the tenant's marketing host when the erasure began.
        public var forwarded: Bool
        /// Whether the relay lane had handed it on to a central relay when the erasure began.
        public var handedOn: Bool
        /// Whether it is a copy of an earlier entry (a re-queued dead letter), which the
        /// aggregates never count.
        public var isCopy = false

        /// Creates a target.
        public init(
            sequence: UInt64, tenant: String, integrationKey: String, platform: String, tokenDigest: String, timeNanoseconds: Int64,
            originRelayId: String?, viaRelayId: String?, forwarded: Bool, handedOn: Bool
        ) {
            self.sequence = sequence
            self.tenant = tenant
            self.integrationKey = integrationKey
            self.platform = platform
            self.tokenDigest = tokenDigest
            self.timeNanoseconds = timeNanoseconds
            self.originRelayId = originRelayId
            self.viaRelayId = viaRelayId
            self.forwarded = forwarded
            self.handedOn = handedOn
        }
    }

    /// The erasure's id: `e` and the UTC time it was asked for, then 8 random hex digits.
    public var id: String
    /// When it was asked for (RFC 3339).
    public var requestedAt: String
    /// `registration-token` or `user-key`.
    public var selectorKind: String
    /// The selector's keyed hash (`hash:` and 12 hex digits), never the selector.
    public var selectorHash: String
    /// The integration key the selector was limited to, if any (not personal data: an app's id).
    public var integrationKey: String?
    /// Every registration below this sequence number was looked at; later ones are not erased.
    public var boundary: UInt64
    /// The registrations to erase, in sequence order.
    public var targets: [Target]
    /// The archive directories whose copies are rewritten too.
    public var archiveDirectories: [String]
    /// Whether the relay counts into the fleet's PostgreSQL: finishing the erasure then needs it.
    public var countsIntoFleet = false
    /// The forwarding store's dead letters of the selector's registrations (ids).
    public var deadLetterIDs: [Int64] = []
    /// When the uploader last delivered a registration of each token, as its deduplication state
    /// remembers it (RFC 3339).
    public var lastDeliveredAt: [String] = []

    /// Creates a plan.
    public init(
        id: String, requestedAt: String, selectorKind: String, selectorHash: String, integrationKey: String?, boundary: UInt64,
        targets: [Target], archiveDirectories: [String]
    ) {
        self.id = id
        self.requestedAt = requestedAt
        self.selectorKind = selectorKind
        self.selectorHash = selectorHash
        self.integrationKey = integrationKey
        self.boundary = boundary
        self.targets = targets
        self.archiveDirectories = archiveDirectories
    }

    /// A new erasure id for a request made at `time`.
    public static func newID(at time: EventTime = .now()) -> String {
        let stamp = time.rfc3339.filter { $0.isNumber }.prefix(14)
        let random = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        return "e\(stamp)-" + String(repeating: "0", count: 8 - random.count) + random
    }

    /// The plan file of erasure `id` in `walDirectory`.
    public static func path(id: String, walDirectory: String) -> String { "\(walDirectory)/erasure-\(id).plan" }

    /// Writes the plan durably (temporary file, fdatasync, rename, directory sync).
    ///
    /// - Throws: ``LogError/fileSystem(_:context:)`` when it cannot be written (nothing was erased).
    public func store(walDirectory: String, fileSystem: any FileSystem = PosixFileSystem()) throws(LogError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes: [UInt8]
        do {
            bytes = Array(try encoder.encode(self))
        } catch {
            throw .fileSystem(
                FileSystemError(operation: "encode", path: Self.path(id: id, walDirectory: walDirectory), errno: 0, reason: "\(error)"),
                context: "writing an erasure plan")
        }
        do {
            try fileSystem.writeAtomically(bytes, to: Self.path(id: id, walDirectory: walDirectory), directory: walDirectory)
        } catch {
            throw .fileSystem(error, context: "writing the plan of erasure \(id) (nothing was erased; try again)")
        }
    }

    /// Removes the plan of a finished erasure.
    ///
    /// - Throws: ``LogError/fileSystem(_:context:)`` when it cannot be removed (the erasure is
    ///   done; the next start finds nothing left to do but removing it).
    public func remove(walDirectory: String, fileSystem: any FileSystem = PosixFileSystem()) throws(LogError) {
        let path = Self.path(id: id, walDirectory: walDirectory)
        do {
            try fileSystem.remove(path)
            try fileSystem.synchronizeDirectory(walDirectory)
        } catch  where error.errno == LogLayout.noSuchFileErrno {
            return
        } catch {
            throw .fileSystem(error, context: "removing \(path) of a finished erasure")
        }
    }

    /// The plans of the erasures not finished in `walDirectory`, oldest first.
    ///
    /// - Throws: ``LogError/fileSystem(_:context:)`` when the directory or a plan cannot be read,
    ///   ``LogError/unreadableErasurePlan(path:reason:)`` when a plan does not decode (with
    ///   `skippingUnreadable`, such a plan is left out instead).
    public static func pending(
        walDirectory: String, fileSystem: any FileSystem = PosixFileSystem(), skippingUnreadable: Bool = false
    ) throws(LogError) -> [ErasurePlan] {
        let names: [String]
        do {
            names = try fileSystem.listDirectory(walDirectory).filter { $0.hasPrefix("erasure-") && $0.hasSuffix(".plan") }.sorted()
        } catch  where error.errno == LogLayout.noSuchFileErrno {
            return []
        } catch {
            throw .fileSystem(error, context: "listing \(walDirectory) for unfinished erasures")
        }
        var plans: [ErasurePlan] = []
        for name in names {
            let path = "\(walDirectory)/\(name)"
            let bytes: [UInt8]
            do {
                bytes = try fileSystem.readFile(path)
            } catch {
                if skippingUnreadable { continue }
                throw .fileSystem(error, context: "reading the plan of an unfinished erasure")
            }
            do {
                plans.append(try JSONDecoder().decode(ErasurePlan.self, from: Data(bytes)))
            } catch {
                if skippingUnreadable { continue }
                throw .unreadableErasurePlan(path: path, reason: "\(error)")
            }
        }
        return plans.sorted { $0.requestedAt < $1.requestedAt }
    }
}
