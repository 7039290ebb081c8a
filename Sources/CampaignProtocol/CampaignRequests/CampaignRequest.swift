import CampaignSDKForm
public import RelayCore

/// One HTTP request to a Campaign host, exactly as the SDKs send it.
public struct CampaignRequest: Sendable, Hashable {
    /// The HTTP method.
    public enum Method: String, Sendable, Hashable {
        case get = "GET"
        case post = "POST"
    }

    /// `GET` for tracking hits, `POST` for registrations.
    public var method: Method
    /// The host it goes to.
    public var host: CampaignHost
    /// The path (after the host's prefix) and query, e.g. `/r/?id=hd828,f0190,2`.
    public var pathAndQuery: String
    /// Header fields besides those the HTTP client adds (`Host`, `Content-Length`).
    public var headers: [(name: String, value: String)]
    /// The body (registrations only).
    public var body: [UInt8]?

    /// A request from its parts (the relay's own requests to another relay use this too).
    public init(method: Method, host: CampaignHost, pathAndQuery: String, headers: [(name: String, value: String)], body: [UInt8]?) {
        self.method = method
        self.host = host
        self.pathAndQuery = pathAndQuery
        self.headers = headers
        self.body = body
    }

    /// The full URL.
    public var url: String { host.url(pathAndQuery) }

    /// The tracking hit for `hit`: `GET /r/?id=h{messageId},{deliveryId},{tag}` with the message id in
    /// its wire form (UUID unchanged, decimal as lowercase hex), tag 1 for impressions and 2 for
    /// opens and clicks.
    public static func tracking(_ hit: TrackingEvent, host: CampaignHost) -> CampaignRequest {
        CampaignRequest(
            method: .get, host: host,
            pathAndQuery:
                "/\(CampaignEndpoint.tracking)/?id=\(TrackingHitID(messageID: hit.messageId.wireForm, deliveryID: hit.deliveryId, tag: hit.action.wireTag))",
            headers: [], body: nil
        )
    }

    /// The request that carries `event` to `host`, as the SDKs send it: a tracking hit or a
    /// registration; `nil` for an erased registration, which nothing carries.
    public static func carrying(_ event: Event, to host: CampaignHost) -> CampaignRequest? {
        switch event {
        case .tracking(let hit): .tracking(hit, host: host)
        case .registration(let registration): .registration(registration, host: host)
        case .erased: nil
        }
    }

    /// The registration for `registration`: a form `POST` to `registerIOS.jssp` or
    /// `registerAndroid.jssp`. A registration an SDK posted goes with its body byte for byte
    /// (``Registration/sdkForm``); any other is encoded with the platform's field order and
    /// `additionalParams` dialect, missing optional fields sent empty, as the SDKs do.
    public static func registration(_ registration: Registration, host: CampaignHost) -> CampaignRequest {
        let body = registration.sdkForm ?? sdkEncodedForm(registration)
        return CampaignRequest(
            method: .post, host: host, pathAndQuery: "/" + CampaignEndpoint.registration(registration.platform),
            headers: [("Content-Type", CampaignEndpoint.formContentType)], body: Array(body.utf8)
        )
    }

    /// The form body an SDK would post for `registration`.
    static func sdkEncodedForm(_ registration: Registration) -> String {
        var fields: [(name: String, value: String)] = [
            ("registrationToken", registration.registrationToken),
            ("mobileAppUuid", registration.integrationKey),
            ("userKey", registration.userKey ?? ""),
        ]
        if registration.platform == .android { fields.append(("deviceImei", registration.deviceImei ?? "")) }
        fields += [
            ("deviceName", registration.deviceName ?? ""),
            ("deviceModel", registration.deviceModel ?? ""),
            ("deviceBrand", registration.deviceBrand ?? ""),
            ("deviceManufacturer", registration.deviceManufacturer ?? ""),
            ("osName", registration.osName ?? ""),
            ("osVersion", registration.osVersion ?? ""),
            ("osLanguage", registration.osLanguage ?? ""),
            ("additionalParams", AdditionalParamsXML.xml(registration.additionalParams, platform: registration.platform)),
        ]
        return FormEncoding.body(fields)
    }

    public static func == (lhs: CampaignRequest, rhs: CampaignRequest) -> Bool {
        lhs.method == rhs.method && lhs.host == rhs.host && lhs.pathAndQuery == rhs.pathAndQuery && lhs.body == rhs.body
            && lhs.headers.map(\.name) == rhs.headers.map(\.name) && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(host)
        hasher.combine(pathAndQuery)
        hasher.combine(body)
    }
}
