public import Logging
public import ServiceLifecycle
import UnixSignals

/// Reloads the listener's certificate and key on SIGHUP (e.g. after a certificate renewal), for
/// connections accepted from then on. A file that cannot be used is logged and the previous
/// certificate stays in force.
public struct CertificateReloadService: Service {
    let certificates: TLSCertificateStore
    let logger: Logger

    /// A service reloading `certificates`.
    public init(certificates: TLSCertificateStore, logger: Logger) {
        self.certificates = certificates
        self.logger = logger
    }

    public func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        for await _ in signals.cancelOnGracefulShutdown() {
            do {
                try certificates.reload()
                logger.notice(
                    "reloaded the TLS certificate (SIGHUP); new connections use it", metadata: ["certificate": "\(certificates.files.certificate)"])
            } catch {
                logger.error("could not reload the TLS certificate; the previous one stays in force", metadata: ["error": "\(error)"])
            }
        }
    }
}
