import Foundation

/// The JSON text of the relay's API objects (``AggregatesReport``, ``DeliveryCounts``, …), the
/// same for the HTTP API and the commands' `--json`.
public enum APIJSON {
    /// `value` as one line of JSON.
    public static func text(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        // Sorted keys: the same text for the same object, run after run (the encoder keeps no order).
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // The API objects hold strings and integers only, which always encode.
        guard let data = try? encoder.encode(value) else { return #"{"error":"the answer could not be encoded"}"# }
        return String(decoding: data, as: UTF8.self)
    }
}
