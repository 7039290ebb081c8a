/// Whose registrations an erasure removes (`campaign-relay erase`, `POST /v1/privacy/erasures`):
/// every registration of one push token, or of one user key, optionally of one app
/// (integration key), whatever its tenant.
public struct ErasureSelector: Sendable, Hashable {
    /// What a registration is matched on.
    public enum Subject: Sendable, Hashable {
        /// The device's push token (`registrationToken`), as the app sent it.
        case registrationToken(String)
        /// The app's user key (`userKey`), often an email address.
        case userKey(String)
    }

    /// The token or user key.
    public var subject: Subject
    /// Only the registrations of this integration key (`mobileAppUuid`); `nil` for every app's.
    public var integrationKey: String?

    /// A selector of `subject`, for every app or one.
    public init(_ subject: Subject, integrationKey: String? = nil) {
        self.subject = subject
        self.integrationKey = integrationKey
    }

    /// Whether `registration` is one this selector erases.
    public func matches(_ registration: Registration) -> Bool {
        if let integrationKey, registration.integrationKey != integrationKey { return false }
        switch subject {
        case .registrationToken(let token): return registration.registrationToken == token
        case .userKey(let key): return registration.userKey == key
        }
    }

    /// `registration-token` or `user-key`: the kind of selector, which the audit records beside its hash.
    public var kind: String {
        switch subject {
        case .registrationToken: "registration-token"
        case .userKey: "user-key"
        }
    }

    /// The text the audit's keyed hash is taken of: the kind, the value and the integration key,
    /// apart by a unit separator, so that a token and a user key of the same text differ.
    public var hashedText: String {
        let value =
            switch subject {
            case .registrationToken(let token): token
            case .userKey(let key): key
            }
        return "\(kind)\u{1F}\(value)\u{1F}\(integrationKey ?? "")"
    }
}
