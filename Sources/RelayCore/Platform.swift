/// The mobile platform of a device registration; it selects the registration endpoint and dialect.
public enum Platform: String, Sendable, Hashable, CaseIterable, Encodable {
    /// Apple devices: `registerIOS.jssp`, `<additionalParams>` sorted by key.
    case ios
    /// Android devices: `registerAndroid.jssp`, `deviceImei`, `<additionalParameters>` in map order.
    case android
}
