public import RelayCore

/// A registration as an SDK posts it to `registerIOS.jssp` / `registerAndroid.jssp`: a form body
/// read the way Campaign reads it, so that the relay refuses only what is unusable.
///
/// The SDKs never retry: a registration the relay refuses is lost for good. So the rules are
/// Campaign's, not stricter ones:
/// - the body must be form data (`name=value` pairs joined by `&`, `%XX` and `+` escapes, UTF-8);
/// - `mobileAppUuid` (the integration key) and `registrationToken` must be there and non-empty;
///   a token is opaque (spaces included, as iOS 13's `{length = 32, bytes = 0x…}` tokens) up to
///   ``maximumTokenBytes``;
/// - everything else is taken as it is: fields the relay does not know (a newer SDK), `deviceImei`
///   on either platform, a field given twice (the first counts), `additionalParams` that are not
///   the SDK's XML (then no parameters are read from it).
///
/// The body itself is kept in ``Registration/sdkForm`` and forwarded byte for byte; the fields read
/// from it serve counting and display.
public struct SDKRegistrationForm: Sendable {
    /// The longest registration token accepted, in UTF-8 bytes.
    public static let maximumTokenBytes = 4096

    /// The form fields the relay reads; any other name is kept in the body and reported.
    public static let knownFields = Set(["registrationToken", "mobileAppUuid", "additionalParams"] + Registration.optionalTextFields.map(\.name))

    /// The registration the body describes, with ``Registration/sdkForm`` set to the body.
    public var registration: Registration
    /// Names of fields the relay does not know, in the order they first appear.
    public var unknownFields: [String]

    /// Reads `body` as a registration for `platform`.
    ///
    /// - Throws: ``EventInputError`` when the body is not form data, or the integration key or
    ///   token is missing, empty or (the token) longer than ``maximumTokenBytes``.
    public init(body: String, platform: Platform, time: EventTime) throws(EventInputError) {
        let fields: [(name: String, value: String)]
        do {
            fields = try FormEncoding.fields(body)
        } catch {
            // The pair's value is not quoted: it may be a push token or a user's key, and answers
            // and logs carry no personal data. A field the SDKs send is named, to say where.
            let name = String(error.text.prefix { $0 != "=" })
            let field = Self.knownFields.contains(name) ? "field \(name)" : "a field"
            throw EventInputError(
                field: nil,
                "the body is not form data: pair \(error.index) (\(field), \(error.text.utf8.count) bytes) is not valid percent-encoded UTF-8")
        }
        var values: [String: String] = [:]
        var unknown: [String] = []
        for (name, value) in fields {
            if !Self.knownFields.contains(name), !unknown.contains(name) { unknown.append(name) }
            if values[name] == nil { values[name] = value }
        }
        guard let key = values["mobileAppUuid"], !key.isEmpty else {
            throw EventInputError(field: "integrationKey", "mobileAppUuid (the integration key) is missing or empty (IntegrationKeyEmpty)")
        }
        guard let token = values["registrationToken"], !token.isEmpty else {
            throw EventInputError(field: "registrationToken", "registrationToken is missing or empty")
        }
        guard token.utf8.count <= Self.maximumTokenBytes else {
            throw EventInputError(field: "registrationToken", "registrationToken is longer than \(Self.maximumTokenBytes) bytes")
        }
        var registration = Registration(platform: platform, integrationKey: key, registrationToken: token, time: time)
        for field in Registration.optionalTextFields {
            registration[keyPath: field.keyPath] = values[field.name]
        }
        registration.additionalParams = values["additionalParams"].flatMap(AdditionalParamsXML.parse)
        registration.sdkForm = body
        self.registration = registration
        self.unknownFields = unknown
    }
}
