import Hummingbird
import RelayEventJSON
import RelayLog

/// `POST /v1/wal/seal`: seals the segment the server appends to, so that `wal rekey` beside the
/// server can rewrite every frame it holds (a quiet relay with large segments would otherwise
/// keep its active segment, and the old key it needs, for ever). Behind the relay's own admin
/// token: it touches every tenant's frames.
///
/// Answers `{"sealedBelow": N, "keyId": "…"}`: every event below sequence `N` is in a segment no
/// commit writes to again, and `keyId` is the key the server seals new frames with (`null`
/// without encryption), so the caller can tell whether the server runs with the newest key.
struct LogSealRoute: RouteGroup, Sendable {
    let log: WriteAheadLog
    let keyId: String?
    let adminToken: String?
    let tenants: TenantDirectory

    /// The answer.
    struct Sealed: Encodable {
        var sealedBelow: UInt64
        var keyId: String?

        private enum CodingKeys: String, CodingKey { case sealedBelow, keyId }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(sealedBelow, forKey: .sealedBelow)
            // `null`, not absent: the key is part of the answer either way.
            try container.encode(keyId, forKey: .keyId)
        }
    }

    func add(to table: RouteTable) {
        let routes = table.group(AdminAuthentication(token: adminToken, tenants: tenants))
        routes.post("v1/wal/seal") { _, _ in
            let boundary = await log.sealActiveSegment()
            return Responses.json(.ok, APIJSON.text(Sealed(sealedBelow: boundary, keyId: keyId)))
        }
    }
}
