/// SHA-256 digests of the short tokens tests use, in lowercase hex, computed outside the project
/// (`printf %s TOKEN | sha256sum`): what a test expects the relay's token digests to be, so that
/// no expected value comes from the code under test (`TokenDigest`).
public enum KnownDigests {
    static let sha256: [String: String] = [
        "t1": "628b49d96dcde97a430dd4f597705899e09a968f793491e4b704cae33a40dc02",
        "t2": "c44474038d459e40e4714afefa7bf8dae9f9834b22f5e8ec1dd434ecb62b512e",
        "t9": "ef46a230cfb0c087fdd8883bc989a3eaa253428f9f6033335e0cee7173c42a92",
        "w": "50e721e49c013f00c62cf59f2163542a9d8df02464efeb615d31051b0fddc326",
        "x": "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
        "y": "a1fce4363854ff888cff4b8e7875d600c2682390412a8cf79b37d0b11148b0fa",
        "z": "594e519ae499312b29433b7dd8a97ff068defcba9755b6d5d00e84c524d67b06",
    ]

    /// The SHA-256 of `token` in hex, from the table; a token missing from it gives a text no
    /// digest equals, so the test that asked fails and names it.
    public static func sha256(of token: String) -> String {
        sha256[token] ?? "no known digest of \(token): add `printf %s \(token) | sha256sum` to KnownDigests"
    }
}
