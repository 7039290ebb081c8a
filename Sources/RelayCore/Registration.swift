/// A device registration (subscription) for push notifications of one app.
///
/// Optional fields are `nil` when the sender left them out; an empty string is kept apart from a
/// missing one (the SDKs send `userKey=&` for an anonymous user).
public struct Registration: Sendable, Hashable {
    /// The platform, which selects the Campaign endpoint and the form dialect.
    public var platform: Platform
    /// The app's integration key (`mobileAppUuid`).
    public var integrationKey: String
    /// The push token: APNs token bytes as hex on iOS, the FCM token on Android.
    public var registrationToken: String
    /// The user's key in Campaign (may be empty for anonymous users).
    public var userKey: String?
    /// The device IMEI (Android only).
    public var deviceImei: String?
    /// The device's name.
    public var deviceName: String?
    /// The device's model.
    public var deviceModel: String?
    /// The device's brand.
    public var deviceBrand: String?
    /// The device's manufacturer.
    public var deviceManufacturer: String?
    /// The operating system's name, e.g. `iOS` or `android`.
    public var osName: String?
    /// The operating system's version, e.g. `iOS 17.2` or `Android 14`.
    public var osVersion: String?
    /// The device's language, e.g. `en-US`.
    public var osLanguage: String?
    /// Extra parameters, in the order given (`nil` when none were given at all).
    public var additionalParams: [AdditionalParameter]?
    /// When the registration happened (default: when the relay ingested it).
    public var time: EventTime
    /// The form body exactly as an SDK posted it, when the registration arrived on an SDK endpoint
    /// (see ``SDKRegistrationForm``): it is forwarded byte for byte, and the fields above are what
    /// it says. `nil` for registrations from the JSON format, which are encoded as the SDKs would.
    public var sdkForm: String?
    /// The entry this one is a copy of (a re-queued dead letter); `nil` for an original.
    public var origin: EventOrigin?
    /// The keyed request it was stored for; `nil` when it came without an `Idempotency-Key`.
    public var request: RequestIdentity?
    /// Where it comes from when another relay handed it on; `nil` when it was logged here first.
    public var chain: ChainOrigin?
    /// The tenant the registration belongs to (the first path segment it came in on); `nil` for the
    /// default tenant (see ``TenantName``).
    public var tenant: TenantName?

    /// Creates a registration; the values are expected to be valid already (see ``EventDecoder``).
    public init(
        platform: Platform, integrationKey: String, registrationToken: String, userKey: String? = nil,
        deviceImei: String? = nil, deviceName: String? = nil, deviceModel: String? = nil, deviceBrand: String? = nil,
        deviceManufacturer: String? = nil, osName: String? = nil, osVersion: String? = nil, osLanguage: String? = nil,
        additionalParams: [AdditionalParameter]? = nil, time: EventTime
    ) {
        self.platform = platform
        self.integrationKey = integrationKey
        self.registrationToken = registrationToken
        self.userKey = userKey
        self.deviceImei = deviceImei
        self.deviceName = deviceName
        self.deviceModel = deviceModel
        self.deviceBrand = deviceBrand
        self.deviceManufacturer = deviceManufacturer
        self.osName = osName
        self.osVersion = osVersion
        self.osLanguage = osLanguage
        self.additionalParams = additionalParams
        self.time = time
    }

    /// The optional text fields in their Campaign wire order, with their names.
    ///
    /// One table serves the JSON decoder, the JSON encoder and the binary codec, so a field
    /// cannot be added to one and forgotten in another.
    public static let optionalTextFields: [(name: String, keyPath: any WritableKeyPath<Registration, String?> & Sendable)] = [
        ("userKey", \.userKey),
        ("deviceImei", \.deviceImei),
        ("deviceName", \.deviceName),
        ("deviceModel", \.deviceModel),
        ("deviceBrand", \.deviceBrand),
        ("deviceManufacturer", \.deviceManufacturer),
        ("osName", \.osName),
        ("osVersion", \.osVersion),
        ("osLanguage", \.osLanguage),
    ]
}
