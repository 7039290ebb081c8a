/// Byte counts as an operator writes them: `10GiB`, `512MiB`, `500MB`, `2TB`, or a plain number
/// of bytes.
enum ByteCountText {
    private static let units: [String: Double] = [
        "": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 1024, "MiB": 1_048_576, "GiB": 1_073_741_824,
        "TiB": 1_099_511_627_776,
    ]

    /// The count `text` names; `nil` when it is not of that form.
    static func parse(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: " ")
        let number = trimmed.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
        let unit = trimmed.dropFirst(number.count).trimmingCharacters(in: " ")
        guard !number.isEmpty, let value = Double(number), let scale = units[unit] else { return nil }
        let bytes = (value * scale).rounded()
        guard bytes.isFinite, bytes >= 0, bytes < 9e18 else { return nil }
        return Int64(bytes)
    }
}
