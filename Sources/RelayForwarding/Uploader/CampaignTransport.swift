public import CampaignProtocol

/// Sends one request to a Campaign host and says what became of it.
///
/// The uploader speaks to the hosts only through this, so its retry logic is the same whatever
/// carries the bytes.
public protocol CampaignTransport: Sendable {
    /// Sends `request`, waiting at most `timeout` for the whole answer.
    func send(_ request: CampaignRequest, timeout: Duration) async -> DeliveryOutcome
}
