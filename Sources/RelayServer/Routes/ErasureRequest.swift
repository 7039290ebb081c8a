import RelayCore

/// The body of `POST /v1/privacy/erasures`: `{"registrationToken": "…"}` or `{"userKey": "…"}`,
/// with an optional `"integrationKey"` and `"dryRun": true`.
enum ErasureRequest {
    /// Why a body is not a request: the field and the rule.
    struct Problem: Error {
        var message: String
    }

    /// The selector and whether it is a dry run, or what is wrong with `body`.
    static func parse(_ body: [UInt8]) -> Result<(ErasureSelector, Bool), Problem> {
        guard case .object(let members)? = try? JSONParser.parse(body) else {
            return .failure(Problem(message: "the body must be a JSON object: {\"registrationToken\": \"…\"} or {\"userKey\": \"…\"}"))
        }
        var subject: ErasureSelector.Subject?
        var integrationKey: String?
        var dryRun = false
        for member in members {
            switch (member.name, member.value) {
            case ("registrationToken", .string(let token)) where !token.isEmpty && subject == nil:
                subject = .registrationToken(token)
            case ("userKey", .string(let key)) where !key.isEmpty && subject == nil:
                subject = .userKey(key)
            case ("integrationKey", .string(let key)) where !key.isEmpty:
                integrationKey = key
            case ("dryRun", .bool(let flag)):
                dryRun = flag
            case ("registrationToken", _), ("userKey", _):
                return .failure(Problem(message: "\(member.name): give exactly one of registrationToken and userKey, a non-empty string"))
            case ("integrationKey", _):
                return .failure(Problem(message: "integrationKey: must be a non-empty string"))
            case ("dryRun", _):
                return .failure(Problem(message: "dryRun: must be true or false"))
            default:
                return .failure(Problem(message: "\(member.name): unknown field (registrationToken, userKey, integrationKey, dryRun)"))
            }
        }
        guard let subject else { return .failure(Problem(message: "registrationToken or userKey: one of them is required")) }
        return .success((ErasureSelector(subject, integrationKey: integrationKey), dryRun))
    }
}
