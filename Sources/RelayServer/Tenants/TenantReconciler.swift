import Logging
import RelayCore
import RelayForwarding
import RelayLog

/// Brings a running relay to a new set of tenants (a reload of `--config` on SIGHUP), without a
/// restart and without losing an event:
/// 1. a new tenant's lane cursors are declared on the log (durably, at the oldest event kept);
/// 2. the uploader stops the lanes of tenants removed or whose hosts or CA file changed (their
///    cursors saved) and starts lanes for tenants added or changed, from their cursors;
/// 3. the tenants' shares of the log are set;
/// 4. the directory is swapped: from then on requests are served as the new tenants (a removed
///    tenant's paths answer 404, a new one's are taken).
///
/// A removed tenant's events stay in the log, counted; its cursors stay too and keep what it was
/// still owed, so declaring it again forwards that (docs/configuration.md).
struct TenantReconciler: Sendable {
    let configuration: RelayServerConfiguration
    let directory: TenantDirectory
    let log: WriteAheadLog
    let uploader: Uploader?
    let logger: Logger

    /// What a reload changed, for its log line.
    struct Summary: Sendable, Hashable {
        var added: [String] = []
        var changed: [String] = []
        var removed: [String] = []
    }

    /// Serves `tenants` from now on.
    ///
    /// - Throws: the error of a step that failed (a cursor that cannot be written, a CA file that
    ///   cannot be used); the tenants served stay as they were, but cursors declared by then stay.
    func apply(_ tenants: [TenantConfiguration]) async throws -> Summary {
        var changed = configuration
        changed.tenants = tenants
        let before = Set(directory.names)
        let after = Set(tenants.map(\.name))
        // A relay handing every event on forwards no tenant itself: its tenants have no lanes.
        let lists = configuration.sinkLists(of: tenants)
        for consumer in lists.consumers { try await log.declareConsumer(consumer) }
        var summary = Summary()
        if let uploader {
            let change = try await uploader.apply(lists)
            summary.changed = change.changed.map(\.text)
        } else if !lists.allSinks.isEmpty {
            logger.error("tenants' hosts are not forwarded to: this relay started without an uploader; restart it")
        }
        await log.setTenantLogShares(changed.tenantLogShares)
        directory.replace(with: tenants)
        summary.added = after.subtracting(before).map(\.text).sorted()
        summary.removed = before.subtracting(after).map(\.text).sorted()
        return summary
    }
}
