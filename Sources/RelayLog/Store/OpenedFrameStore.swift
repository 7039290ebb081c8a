import RelayCore

/// What opening a ``FrameStore`` found, which the ``WriteAheadLog`` starts from: the store, the
/// cursors and where they keep, the durable end and any damage, the relay identity, the erasures
/// left unfinished.
package struct OpenedFrameStore: Sendable {
    /// The store, ready for appends from `report.nextSequence`.
    package var store: any FrameStore
    /// Every cursor and its position.
    package var positions: [String: UInt64]
    /// Where cursors are written.
    package var cursors: any CursorKeeper
    /// What opening found and repaired; `nextSequence` is the durable end.
    package var report: RecoveryReport
    /// The relay identity the store's events carry as their origin.
    package var identity: RelayIdentity
    /// Whether the identity is new, a new epoch, or as before.
    package var change: RelayIdentity.Change
    /// The registrations of unfinished erasures.
    package var erasures: ErasureMask
    /// The store's extent as opened.
    package var extent: FrameStoreExtent
    /// Decodes each frame once for all the readers the store makes.
    package var sharedDecoder: SharedFrameDecoder

    /// What opening a store found.
    package init(
        store: any FrameStore, positions: [String: UInt64], cursors: any CursorKeeper, report: RecoveryReport, identity: RelayIdentity,
        change: RelayIdentity.Change, erasures: ErasureMask, extent: FrameStoreExtent, sharedDecoder: SharedFrameDecoder
    ) {
        self.store = store
        self.positions = positions
        self.cursors = cursors
        self.report = report
        self.identity = identity
        self.change = change
        self.erasures = erasures
        self.extent = extent
        self.sharedDecoder = sharedDecoder
    }
}
