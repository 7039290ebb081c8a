import Foundation
public import Logging
import RelayCore
import RelayIO
public import RelayLog
import RelayTLS
import ServiceLifecycle

/// `campaign-relay serve`: ingest over HTTP (SDK-compatible endpoints and a JSON API), the
/// write-ahead log, the aggregator and the uploader in one process, under
/// swift-service-lifecycle.
///
/// Acknowledgements are durable: a 200 means the events were fdatasync'ed. SIGTERM or SIGINT stop
/// the intake (503 + `Retry-After`), finish requests under way, save the aggregator's and
/// uploader's positions, close the log, and return.
public struct RelayServer: Sendable {

    /// The configuration.
    public let configuration: RelayServerConfiguration
    let logger: Logger
    /// What the log is written through.
    let fileSystem: any FileSystem

    /// A server with `configuration`, writing its log through `fileSystem` (tests pass one that
    /// fails on demand).
    public init(configuration: RelayServerConfiguration, logger: Logger, fileSystem: any FileSystem = PosixFileSystem()) {
        self.configuration = configuration
        self.logger = logger
        self.fileSystem = fileSystem
    }

    /// Why the server would not start.
    public struct StartupError: Error, CustomStringConvertible {
        /// What is wrong and what to do.
        public var description: String
    }

    /// Runs until SIGTERM/SIGINT (or the task is cancelled); `onRunning` gets the bound port.
    ///
    /// - Throws: ``StartupError`` for an unsafe configuration (a non-loopback address without an
    ///   admin token), and the log's, stores' or server's errors.
    public func run(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        guard configuration.bindsLoopbackOnly || configuration.adminToken != nil else {
            throw StartupError(
                description: "refusing to listen on \(configuration.host) without --admin-token: the admin endpoints would be open to the network"
            )
        }
        if let problem = ListenAddressCheck.problem(host: configuration.host, port: configuration.port) { throw StartupError(description: problem) }
        // Certificates first: a bad file stops the start before anything is opened.
        let certificates = try configuration.tls.map { files throws(TLSCertificateStore.Failure) in try TLSCertificateStore(files: files) }
        let components = try await ServerComponents.assemble(configuration: configuration, fileSystem: fileSystem, logger: logger)
        let recordFiles = BlockingExecutor(name: "server-record")
        let application = RelayApplication.make(
            configuration: configuration, routes: components.routeGroups(), metrics: components.metrics, certificates: certificates,
            recordFiles: recordFiles, ingestor: components.ingestor, tenants: components.tenants, logger: logger, onRunning: onRunning)
        let services = components.services(
            application: application, certificates: certificates.map { CertificateReloadService(certificates: $0, logger: logger) })
        var groupConfiguration = ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownDelay + configuration.shutdownTimeout
        let dataDirectory = configuration.dataDirectory
        do {
            try await ServiceGroup(configuration: groupConfiguration).run()
        } catch {
            await recordFiles.run { ServerRecord.remove(dataDirectory: dataDirectory, pid: getpid()) }
            throw error
        }
        await recordFiles.run { ServerRecord.remove(dataDirectory: dataDirectory, pid: getpid()) }
        let durable = await components.log.durableSequence
        logger.notice("campaign-relay stopped", metadata: ["last-durable-sequence": "\(durable - 1)"])
    }
}
