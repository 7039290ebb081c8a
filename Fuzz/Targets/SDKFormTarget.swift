import CampaignProtocol
import CampaignSDKForm
import RelayCore

/// An SDK registration form body (the first byte picks the platform). One that is accepted goes
/// upstream byte for byte; its `additionalParams` XML prints and parses back to the same
/// parameters; the registration, written as the relay's JSON, reads back unchanged.
enum SDKFormTarget {
    static func run(_ bytes: [UInt8]) throws(FuzzFinding) {
        guard let first = bytes.first else { return }
        let platform = Platform.allCases[Int(first) % Platform.allCases.count]
        let body = String(decoding: bytes.dropFirst(), as: UTF8.self)
        if let params = AdditionalParamsXML.parse(body) { try xmlRoundTrip(params, platform: platform) }
        guard let form = try? SDKRegistrationForm(body: body, platform: platform, time: JSONEventsTarget.defaultTime) else { return }
        guard let host = try? CampaignHost(parsing: "https://marketing.example", role: "marketing") else { return }
        let request = CampaignRequest.registration(form.registration, host: host)
        try require(request.body == Array(body.utf8), .sdkForm, "the body forwarded upstream differs from the body received")
        if let params = form.registration.additionalParams { try xmlRoundTrip(params, platform: platform) }
        try JSONEventsTarget.roundTrip(.registration(form.registration))
    }

    /// The XML reads back to the parameters as the SDKs write them: on iOS the entries sorted by
    /// name, and then carriage returns and line feeds dropped. The order is that of the names as
    /// given, line breaks included: the iOS SDK sorts its dictionary's keys before it escapes them
    /// (the fuzzer found names that sort differently once their carriage returns are gone).
    static func xmlRoundTrip(_ params: [AdditionalParameter], platform: Platform) throws(FuzzFinding) {
        let xml = AdditionalParamsXML.xml(params, platform: platform)
        let again = AdditionalParamsXML.parse(xml)
        var ordered = params
        if platform == .ios { ordered.sort { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) } }
        let expected = ordered.map { AdditionalParameter(name: withoutLineBreaks($0.name), value: .string(withoutLineBreaks($0.value.wireText))) }
        try require(again == expected, .sdkForm, "additionalParams \(params) printed as \(xml) parse to \(String(describing: again))")
    }

    static func withoutLineBreaks(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        out.append(contentsOf: text.unicodeScalars.filter { $0 != "\r" && $0 != "\n" })
        return String(out)
    }
}
