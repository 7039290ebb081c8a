import ArgumentParser
import RelayIO

/// `--config FILE` of the commands that take a configuration file (``ConfigurationFile``). The
/// file is read before the command line is parsed; the option is declared here so that the
/// command accepts it and its help explains it.
struct ConfigFileOption: ParsableArguments {
    @Option(
        name: .customLong("config"),
        help: ArgumentHelp(
            "TOML file of options, keys named like the long options, and tenants as [tenant.NAME] tables (see campaign-relay config check); flags and environment variables win over it.",
            valueName: "file"))
    var path: String?

    /// The tenants the file declares (`[tenant.NAME]`); none without `--config`. The file is read
    /// again, on an executor of its own (a command runs on the cooperative pool by then).
    ///
    /// - Throws: ``RuntimeFailure`` naming the file, the line and the key when the file is not valid.
    func tenants() async throws -> [TenantTable] {
        guard let path else { return [] }
        return try await Self.tenants(path: path)
    }

    /// Checks `tenants` (this file's) as `serve` checks them for a command forwarding to Campaign
    /// itself: where the default tenant's hits or registrations are sent, each tenant needs its own
    /// host of that kind. Nothing to check without `--config`.
    ///
    /// - Throws: ``RuntimeFailure`` naming the file, the tenant's line and the key.
    func checkForwarding(_ tenants: [TenantTable], tracking: Bool, marketing: Bool) throws {
        guard let path else { return }
        do {
            try TenantTable.check(
                tenants, path: path, forwardsTracking: tracking, forwardsMarketing: marketing, handsOnToRelay: false, adminToken: nil,
                maximumLogBytes: nil)
        } catch {
            throw RuntimeFailure(error.description)
        }
    }

    /// The tenants of the file at `path`, read on an executor of its own.
    ///
    /// - Throws: ``RuntimeFailure`` naming the file, the line and the key when the file is not valid.
    static func tenants(path: String) async throws -> [TenantTable] {
        try await reading(path) { $0.tenants }
    }

    /// What `take` finds in the file at `path`, read on an executor of its own (a command runs on
    /// the cooperative pool by then).
    ///
    /// - Throws: ``RuntimeFailure`` naming the file, the line and the key when the file is not valid.
    static func reading<Value: Sendable>(_ path: String, _ take: @escaping @Sendable (ConfigurationFile) -> Value) async throws -> Value {
        let read = await BlockingExecutor(name: "config-read").run { () -> Result<Value, ConfigurationFile.Failure> in
            do throws(ConfigurationFile.Failure) { return .success(take(try ConfigurationFile(path: path))) } catch { return .failure(error) }
        }
        switch read {
        case .success(let value): return value
        case .failure(let failure): throw RuntimeFailure(failure.description)
        }
    }
}
