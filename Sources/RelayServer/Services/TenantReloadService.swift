import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads the tenants of `--config` on SIGHUP (``RelayServerConfiguration/reloadTenants``) and
/// applies them (``TenantReconciler``). A file that cannot be read or breaks a rule is logged with
/// its file, line and key, and the tenants stay as they were. The other settings of the file are
/// read when `serve` starts only.
///
/// It runs whether or not there is a file to reload, so that SIGHUP, which reloads the TLS
/// certificate too, never stops the relay.
struct TenantReloadService: Service {
    let reload: (@Sendable () async throws -> [TenantConfiguration])?
    let reconciler: TenantReconciler
    let logger: Logger

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        for await _ in signals.cancelOnGracefulShutdown() {
            guard let reload else {
                logger.notice("SIGHUP: no --config file to reload tenants from")
                continue
            }
            do {
                let tenants = try await reload()
                let summary = try await reconciler.apply(tenants)
                logger.notice(
                    "reloaded the tenants of --config (SIGHUP); other settings apply at the next start",
                    metadata: [
                        "tenants": "\(tenants.map(\.name.text).sorted().joined(separator: ","))", "added": "\(summary.added.joined(separator: ","))",
                        "changed": "\(summary.changed.joined(separator: ","))", "removed": "\(summary.removed.joined(separator: ","))",
                    ])
            } catch {
                logger.error("could not reload the tenants (SIGHUP); they stay as they were", metadata: ["error": "\(error)"])
            }
        }
    }
}
