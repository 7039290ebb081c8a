/// The parsers of untrusted bytes, each driven by libFuzzer (`Fuzz/fuzz.sh`) and replayed from its
/// committed corpus by the tests (`Fuzz/Corpus/<name>/`).
///
/// A target never only checks that a parser returns: each states what must hold of what it returns
/// (a round trip, a bound, an order), so the fuzzer finds wrong answers as well as crashes.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// `JSONParser`: any bytes; a value it returns prints and parses back to itself.
    case jsonValue = "json-value"
    /// The relay's JSON events: `POST /v1/events` bodies (array or NDJSON), `ingest` lines, and
    /// each accepted event written back out as JSON and read again unchanged.
    case jsonEvents = "json-events"
    /// The SDK registration form (`POST /nms/mobile/1/registerAndroid.jssp`, `…registerIOS.jssp`)
    /// and its `additionalParams` XML, which must print and parse back to the same parameters.
    case sdkForm = "sdk-form"
    /// `GET /r/` tracking-hit ids: one that parses prints back to an id that parses the same.
    case trackingHit = "tracking-hit"
    /// `Retry-After` in both forms: a delay is never negative and never above the cap.
    case retryAfter = "retry-after"
    /// A log segment's frame area (walker, zlib, binary codec), read by `wal verify`, the reader
    /// and recovery: recovery leaves no torn tail, keeps every valid event and is idempotent.
    case walSegment = "wal-segment"
    /// The binary event codec alone: what it decodes encodes and decodes to the same events.
    case eventCodec = "event-codec"
    /// The 28-byte cursor file: only an exact, checksummed encoding is accepted.
    case cursorFile = "cursor-file"
    /// The relay-to-relay batch body: its events lie in the range it was sent for, ascending, and
    /// re-encode to the same events.
    case relayBatch = "relay-batch"

    /// Runs the target on one input.
    ///
    /// - Throws: ``FuzzFinding`` when a stated property does not hold. Crashes, overflows and
    ///   unbounded allocations are found by the fuzzer's own sanitizers instead.
    public func run(_ bytes: [UInt8]) throws(FuzzFinding) {
        switch self {
        case .jsonValue: try JSONValueTarget.run(bytes)
        case .jsonEvents: try JSONEventsTarget.run(bytes)
        case .sdkForm: try SDKFormTarget.run(bytes)
        case .trackingHit: try TrackingHitTarget.run(bytes)
        case .retryAfter: try RetryAfterTarget.run(bytes)
        case .walSegment: try WALSegmentTarget.run(bytes)
        case .eventCodec: try EventCodecTarget.run(bytes)
        case .cursorFile: try CursorFileTarget.run(bytes)
        case .relayBatch: try RelayBatchTarget.run(bytes)
        }
    }
}
