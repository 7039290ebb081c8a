import RelayCore

/// A registration's personal data in the relay's JSON event format, replaced by keyed hashes for
/// showing (``DeadLetter``): the push token, the user key, the device's IMEI, name and model, each
/// additional parameter's value, and a form an SDK posted (which holds them all). Tracking hits
/// carry none.
enum DeadLetterRedaction {
    /// The fields whose text is personal data.
    static let personalFields: Set<String> = ["registrationToken", "userKey", "deviceImei", "deviceName", "deviceModel", "sdkForm"]

    /// The shortest value hidden inside other text (a URL, the host's answer): a shorter one is
    /// too likely to be a part of ordinary words, and too short to tell anyone apart.
    static let shortestHiddenInText = 6

    /// A personal value and the hash shown for it.
    struct Hidden {
        var text: String
        var pseudonym: String
    }

    /// `event` with its personal values hashed, and those values (longest first, so that a value
    /// inside another is replaced after it) for hiding them elsewhere too.
    static func redact(_ event: JSONValue?, by pseudonymizer: Pseudonymizer) -> (JSONValue?, [Hidden]) {
        guard case .object(let members)? = event else { return (event, []) }
        var hidden: [Hidden] = []
        func hide(_ text: String) -> JSONValue {
            let pseudonym = pseudonymizer.pseudonym(text)
            if text.count >= shortestHiddenInText { hidden.append(Hidden(text: text, pseudonym: pseudonym)) }
            return .string(pseudonym)
        }
        let redacted = members.map { member -> JSONMember in
            switch (member.name, member.value) {
            case (let name, .string(let text)) where personalFields.contains(name):
                return JSONMember(name: name, value: hide(text))
            case ("additionalParams", .object(let params)):
                return JSONMember(
                    name: "additionalParams",
                    value: .object(
                        params.map { param in
                            switch param.value {
                            case .string(let text): JSONMember(name: param.name, value: hide(text))
                            case .number(let literal): JSONMember(name: param.name, value: hide(literal))
                            default: param
                            }
                        }))
            default:
                return member
            }
        }
        return (.object(redacted), hidden.sorted { $0.text.count > $1.text.count })
    }
}
