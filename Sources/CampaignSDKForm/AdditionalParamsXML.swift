public import RelayCore

/// The XML string the SDKs send as `additionalParams` (before form encoding), in each platform's
/// dialect:
/// - iOS: `<additionalParams>`, entries sorted by name, `<param name="K" value="V" />`, `'` as `&#x27;`;
/// - Android: `<additionalParameters>`, entries in the order given, `<param name="K" value="V"/>`,
///   `'` as `&#39;`.
///
/// Both escape `&`, `"`, `<`, `>` and drop carriage returns and line feeds.
public enum AdditionalParamsXML {
    /// The XML for `params` (`nil` or empty gives the empty root element).
    public static func xml(_ params: [AdditionalParameter]?, platform: Platform) -> String {
        let entries = params ?? []
        switch platform {
        case .ios:
            let sorted = entries.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
            return "<additionalParams>"
                + sorted.map {
                    "<param name=\"\(escape($0.name, apostrophe: "&#x27;"))\" value=\"\(escape($0.value.wireText, apostrophe: "&#x27;"))\" />"
                }.joined()
                + "</additionalParams>"
        case .android:
            return "<additionalParameters>"
                + entries.map {
                    "<param name=\"\(escape($0.name, apostrophe: "&#39;"))\" value=\"\(escape($0.value.wireText, apostrophe: "&#39;"))\"/>"
                }.joined()
                + "</additionalParameters>"
        }
    }

    static func escape(_ text: String, apostrophe: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "\"": out += "&quot;"
            case "'": out += apostrophe
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\r", "\n": continue
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// The entries of an `additionalParams` XML string in either dialect: `<additionalParams>` or
    /// `<additionalParameters>` holding `<param name="…" value="…" />` elements, every value a
    /// string; an empty text gives no entries.
    ///
    /// - Returns: `nil` when the text is not that XML (the SDKs never send such text; the caller
    ///   decides whether that matters).
    public static func parse(_ xml: String) -> [AdditionalParameter]? {
        var scanner = XMLScanner(Array(xml.utf8))
        scanner.skipSpaces()
        if scanner.atEnd { return [] }
        guard let root = scanner.openTag(), root.name == "additionalParams" || root.name == "additionalParameters" else { return nil }
        var params: [AdditionalParameter] = []
        if !root.selfClosing {
            while true {
                scanner.skipSpaces()
                if scanner.closeTag(root.name) { break }
                guard let element = scanner.openTag(), element.name == "param", element.selfClosing,
                    let name = element.attributes["name"], let value = element.attributes["value"]
                else { return nil }
                params.append(AdditionalParameter(name: name, value: .string(value)))
            }
        }
        scanner.skipSpaces()
        return scanner.atEnd ? params : nil
    }
}
