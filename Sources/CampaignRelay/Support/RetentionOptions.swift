import ArgumentParser
import RelayLog

/// How the log keeps what it holds: for how long once its consumers have passed it, where it goes
/// after, and encrypted with which keys. Options of every command that opens the log and may
/// delete its segments.
struct RetentionOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Keep segments every consumer has passed for this long after their last event, for `replay` (e.g. 36h, 7d; 0: delete them as soon as passed).",
            valueName: "duration"))
    var retain = "24h"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Within this many bytes of log: past it, the oldest passed segments go before their time (e.g. 10GiB, 500MB; unlimited: no quota). Segments a consumer still needs always stay.",
            valueName: "bytes"))
    var retainBytes = "10GiB"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Copy each segment leaving the log into this directory first (copy, fsync, rename; then delete), for `replay --from-archive`.",
            valueName: "dir"))
    var archiveDir: String?

    @OptionGroup var encryption: EncryptionOptions

    func validate() throws {
        _ = try retention()
        if let archiveDir, archiveDir.isEmpty { throw ValidationError("--archive-dir must not be empty") }
    }

    /// The retention the options name.
    func retention() throws(ValidationError) -> LogRetention {
        let age: Duration
        if retain.trimmingCharacters(in: " ") == "0" {
            age = .zero
        } else if let parsed = DurationText.parse(retain) {
            age = parsed
        } else {
            throw ValidationError("--retain must be a duration such as 36h, 7d or 90m, or 0 (got \(retain))")
        }
        if retainBytes.trimmingCharacters(in: " ") == "unlimited" { return LogRetention(age: age, bytes: nil) }
        guard let bytes = ByteCountText.parse(retainBytes) else {
            throw ValidationError("--retain-bytes must be a size such as 10GiB, 500MB or 1073741824, or unlimited (got \(retainBytes))")
        }
        return LogRetention(age: age, bytes: bytes)
    }

    /// `configuration` with these options applied.
    ///
    /// - Throws: `ValidationError` for a malformed duration or size, ``RuntimeFailure`` for a key
    ///   file that cannot be used.
    func applied(to configuration: LogConfiguration = LogConfiguration()) async throws -> LogConfiguration {
        var result = configuration
        result.retention = try retention()
        result.archiveDirectory = archiveDir
        result.encryption = try await encryption.keyRing()
        return result
    }
}
