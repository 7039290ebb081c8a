import CampaignProtocol
import CampaignSDKForm
import RelayCore

/// The `id` of `GET /r/?id=…`, as received and as percent-decoded from a query. An id that parses
/// prints back to one that parses the same; a hit that is accepted is forwarded as an id that reads
/// back to the same event.
enum TrackingHitTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFinding) {
        let text = String(decoding: bytes, as: UTF8.self)
        try check(text)
        if let decoded = FormEncoding.decode(Substring(text)), decoded != text { try check(decoded) }
    }

    static func check(_ id: String) throws(FuzzFinding) {
        if let hit = try? TrackingHitID(parsing: id) {
            let again = try? TrackingHitID(parsing: hit.description)
            try require(again == hit, .trackingHit, "\(hit) reads back as \(String(describing: again))")
        }
        guard let event = try? SDKTrackingHit.event(id: id, time: JSONEventsTarget.defaultTime) else { return }
        guard let host = try? CampaignHost(parsing: "https://tracking.example", role: "tracking") else { return }
        let request = CampaignRequest.tracking(event, host: host)
        let prefix = "/\(CampaignEndpoint.tracking)/?id="
        try require(request.pathAndQuery.hasPrefix(prefix), .trackingHit, "forwarded as \(request.pathAndQuery)")
        let forwarded = String(request.pathAndQuery.dropFirst(prefix.count))
        let reread: TrackingEvent
        do {
            reread = try SDKTrackingHit.event(id: forwarded, time: JSONEventsTarget.defaultTime)
        } catch {
            throw FuzzFinding(.trackingHit, "\(id.debugDescription) is forwarded as \(forwarded), which is refused: \(error.message)")
        }
        try require(reread == event, .trackingHit, "\(id.debugDescription) is forwarded as \(forwarded), which reads as \(reread)")
        try JSONEventsTarget.roundTrip(.tracking(event))
    }
}
