import Foundation
import RelayTestSupport
import Testing

/// A data directory of `count` tracking hits ingested by the real binary into 4 KiB segments: hit
/// i at sequence i, message id i, action by `i % 3` (impression, open, click), delivery
/// `deliveryId(i)`, all at 2026-11-21T00:00:00Z.
package func ingestedHits(_ count: Int, binary: String, directory: String, deliveryId: (Int) -> String) async throws {
    let actions = ["impression", "open", "click"]
    let lines = (1...count).map { index in
        #"{"kind":"track","action":"\#(actions[index % 3])","messageId":"\#(index)","deliveryId":"\#(deliveryId(index))","time":"2026-11-21T00:00:00.000Z"}"#
    }
    let ingest = try await RelayBinary.run(
        binary, ["ingest", "-", "--data-dir", directory, "--segment-bytes", "4096"], input: Data((lines.joined(separator: "\n") + "\n").utf8))
    try #require(ingest.status == 0, "\(ingest.stderr)")
}
