public import RelayCore

/// The paths of a Campaign marketing and tracking host that the SDKs call, relative to the host
/// (and its path prefix), without a leading slash, as routers take them.
public enum CampaignEndpoint {
    /// `nms/mobile/1/registerIOS.jssp` or `nms/mobile/1/registerAndroid.jssp`: where `platform`'s
    /// SDK posts a registration form.
    public static func registration(_ platform: Platform) -> String {
        switch platform {
        case .ios: "nms/mobile/1/registerIOS.jssp"
        case .android: "nms/mobile/1/registerAndroid.jssp"
        }
    }

    /// `r`: the redirection server's tracking path, called as `GET /r/?id=h{messageId},{deliveryId},{tag}`.
    public static let tracking = "r"

    /// `r/test`: the redirection server's liveness page, which monitoring and some SDK set-ups probe.
    public static let trackingTest = "r/test"

    /// The media type of registration forms, without parameters: what a registration's
    /// `Content-Type` must name when it names one.
    public static let formMediaType = "application/x-www-form-urlencoded"

    /// The content type of registration forms, exactly as the SDKs send it (no space before `charset`).
    public static let formContentType = formMediaType + ";charset=UTF-8"
}
