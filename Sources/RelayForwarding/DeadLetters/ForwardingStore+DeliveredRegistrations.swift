import CampaignProtocol
import CampaignSDKForm
public import RelayCore
import RelayLog
public import RelaySQLite

/// The last registration delivered per tenant's device token, for the SDKs' "skip an unchanged
/// registration" rule (the Campaign marketing sink's ``MarketingHostSink/unchangedRegistration(in:)``):
/// remembered by hashes only.
extension ForwardingStore {
    /// What `delivered_registrations` keeps of a token: its SHA-256 in hex (``TokenDigest``).
    static func tokenDigest(_ token: String) -> String { TokenDigest.hex(token) }

    /// What it keeps of the fields the SDKs compare: the SHA-256 of the token, a unit separator and
    /// the fingerprint. The token (random, long) makes a user key behind it unguessable.
    static func fingerprintDigest(token: String, fingerprint: String) -> String {
        TokenDigest.hex(Array((token + "\u{1F}" + fingerprint).utf8))
    }

    /// Whether `registration` equals the last one delivered for its device token, delivered less
    /// than `window` ago (so an opt-out followed by an opt-in still reaches Campaign in time).
    public func isUnchanged(_ registration: Registration, within window: Duration) throws(SQLiteError) -> Bool {
        findDelivered.reset()
        try findDelivered.bind(1, registration.tenant.storedName)
        try findDelivered.bind(2, registration.platform.rawValue)
        try findDelivered.bind(3, registration.integrationKey)
        try findDelivered.bind(4, Self.tokenDigest(registration.registrationToken))
        defer { findDelivered.reset() }
        guard try findDelivered.step(), findDelivered.text(0) == Self.fingerprintDigest(registration) else { return false }
        guard let text = findDelivered.text(1), let delivered = try? EventTime(rfc3339: text, field: "delivered_at") else { return false }
        return EventTime.now().nanosecondsSinceEpoch - delivered.nanosecondsSinceEpoch < window.nanoseconds
    }

    /// Remembers `registration` as the last one delivered for its device token.
    public func recordDelivered(_ registration: Registration) throws(SQLiteError) {
        upsertDelivered.reset()
        try upsertDelivered.bind(1, registration.tenant.storedName)
        try upsertDelivered.bind(2, registration.platform.rawValue)
        try upsertDelivered.bind(3, registration.integrationKey)
        try upsertDelivered.bind(4, Self.tokenDigest(registration.registrationToken))
        try upsertDelivered.bind(5, Self.fingerprintDigest(registration))
        try upsertDelivered.bind(6, EventTime.now().rfc3339)
        try upsertDelivered.step()
    }

    /// What the SDKs compare, the user key and the parameters (as the platform sends them), hashed
    /// with the token (``fingerprintDigest(token:fingerprint:)``).
    static func fingerprintDigest(_ registration: Registration) -> String {
        fingerprintDigest(
            token: registration.registrationToken,
            fingerprint: (registration.userKey ?? "") + "\u{1F}"
                + AdditionalParamsXML.xml(registration.additionalParams, platform: registration.platform))
    }
}
