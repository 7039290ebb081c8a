/// Encryption keys for tests: 32 bytes that look random, fixed by a label (SplitMix64 seeded with
/// the label's FNV-1a hash), so a run that fails with a key repeats with the same key.
public enum TestKeys {
    /// The 32-byte key named `label`: the same bytes in every run, other bytes for another label.
    public static func bytes(_ label: String) -> [UInt8] {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in label.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        var generator = SeededGenerator(seed: hash)
        return (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}
