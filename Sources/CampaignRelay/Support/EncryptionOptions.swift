import ArgumentParser
import RelayIO
import RelayLog

/// `--encryption-key-file`: the keys of encryption at rest, for every command that writes or
/// reads the log's events.
struct EncryptionOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Encrypt the log at rest (AES-256-GCM) with the newest key of this file, and read frames sealed with any of its keys. One key per line, ID:BASE64 of 32 bytes (head -c 32 /dev/urandom | base64), newest last; mode 0600. Commands that read events need it once the log holds encrypted frames.",
            valueName: "path"))
    var encryptionKeyFile: String?

    func validate() throws {
        if let encryptionKeyFile, encryptionKeyFile.isEmpty { throw ValidationError("--encryption-key-file must not be empty") }
    }

    /// The keys of the file (read on a thread of its own), or `nil` without the option.
    ///
    /// - Throws: ``RuntimeFailure`` naming the file, the line and the rule when the file cannot be used.
    func keyRing() async throws(RuntimeFailure) -> LogKeyRing? {
        guard let path = encryptionKeyFile else { return nil }
        do {
            return try await BlockingExecutor(name: "key-file").run { () throws(LogKeyFileError) in try LogKeyFile.load(path: path) }
        } catch {
            throw RuntimeFailure(error.description)
        }
    }
}
