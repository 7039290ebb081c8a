extension [UInt8] {
    /// Whether the UTF-8 bytes of `text` occur in these bytes: for tests that look for a value in
    /// a file's raw bytes (a canary that must not be at rest, a key id in a frame).
    public func contains(utf8 text: String) -> Bool {
        let needle = Array(text.utf8)
        guard !needle.isEmpty, needle.count <= count else { return needle.isEmpty }
        for start in 0...(count - needle.count) where self[start] == needle[0] {
            if self[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }
}
