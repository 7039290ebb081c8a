/// Where an erasure keeps its plan (``ErasurePlan``) from the moment it is decided until the
/// erasure is finished: whoever reads the log afterwards masks the plan's registrations, and
/// whoever finishes the erasure reads it back.
///
/// Files beside the segments (``ErasurePlanFiles``) for the file log; rows beside the stream for
/// the log kept in PostgreSQL, so that the relay that adopts a stream finds the erasures its relay
/// did not finish.
///
/// The calls block (files, a database): run them on a thread made for blocking calls.
public protocol ErasurePlanStore: Sendable {
    /// How errors and logs name the place (a directory, a stream).
    var place: String { get }

    /// Keeps `plan` durably; once this returns, the erasure is finished whatever happens.
    ///
    /// - Throws: ``LogError`` when it cannot be kept (nothing was erased; try again).
    func store(_ plan: ErasurePlan) throws(LogError)

    /// Removes the plan of a finished erasure (removing one already gone is no error).
    ///
    /// - Throws: ``LogError`` when it cannot be removed: the erasure is done, and finishing it
    ///   again only finds nothing left to do.
    func remove(_ plan: ErasurePlan) throws(LogError)

    /// The plans of the erasures not finished, oldest first; with `skippingUnreadable`, a plan
    /// that cannot be read is left out rather than failing the others.
    ///
    /// - Throws: ``LogError`` when the place cannot be read, or (without `skippingUnreadable`)
    ///   ``LogError/unreadableErasurePlan(path:reason:)``.
    func pending(skippingUnreadable: Bool) throws(LogError) -> [ErasurePlan]
}

/// The plans of the file log: `erasure-<id>.plan` files in the log's directory (`<data-dir>/wal`),
/// written atomically and synchronously (``ErasurePlan/store(walDirectory:fileSystem:)``).
public struct ErasurePlanFiles: ErasurePlanStore {
    /// The directory of the plans.
    public let directory: String
    let fileSystem: any FileSystem

    /// The plans in `directory`.
    public init(directory: String, fileSystem: any FileSystem = PosixFileSystem()) {
        self.directory = directory
        self.fileSystem = fileSystem
    }

    public var place: String { directory }

    public func store(_ plan: ErasurePlan) throws(LogError) {
        try plan.store(walDirectory: directory, fileSystem: fileSystem)
    }

    public func remove(_ plan: ErasurePlan) throws(LogError) {
        try plan.remove(walDirectory: directory, fileSystem: fileSystem)
    }

    public func pending(skippingUnreadable: Bool) throws(LogError) -> [ErasurePlan] {
        try ErasurePlan.pending(walDirectory: directory, fileSystem: fileSystem, skippingUnreadable: skippingUnreadable)
    }
}
