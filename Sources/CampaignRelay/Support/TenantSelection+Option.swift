import ArgumentParser
import RelayCore

extension TenantSelection {
    /// `--tenant NAME` of a command that shows one tenant's rows (`stats`, `deadletter list`):
    /// every tenant without the option, `default` the default tenant.
    ///
    /// - Throws: `ValidationError` naming the rule the name breaks.
    static func option(_ tenant: String?) throws -> TenantSelection {
        guard let tenant else { return .all }
        do {
            return try TenantSelection(parsing: tenant)
        } catch {
            throw ValidationError("--tenant: \(error.message.replacing("tenant ", with: "", maxReplacements: 1)); `default` names the default tenant")
        }
    }
}
