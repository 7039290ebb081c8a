/// The version `campaign-relay --version` prints.
enum RelayVersion {
    static let current = "0.1.0"
}
