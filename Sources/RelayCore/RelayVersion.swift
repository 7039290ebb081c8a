/// The relay's version: what `campaign-relay --version` prints, `GET /r/test` and
/// `relay_build_info` report, and `server.json` records.
public enum RelayVersion {
    /// The version of this build.
    public static let current = "0.1.0"
}
