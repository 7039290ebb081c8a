public import RelayCore

/// Writes events in the relay's JSON event format (the format ``EventDecoder`` reads).
///
/// Canonical field names are used (`messageId`, never `_mId`); every value is reproduced as it was
/// ingested, so `EventDecoder.decode(EventEncoder.json(e))` gives back `e`.
public enum EventEncoder {
    /// The event as one line of JSON (no trailing newline), optionally preceded by `"seq":N`.
    public static func json(_ event: Event, sequence: UInt64? = nil) -> String {
        var out = "{"
        out.reserveCapacity(160)
        if let sequence {
            out += "\"seq\":"
            out += String(sequence)
            out += ","
        }
        switch event {
        case .erased(let entry):
            // What `wal dump` shows of an erased registration: that it was one, and when.
            out += "\"kind\":\"erased\",\"time\":\""
            out += entry.time.rfc3339
            out += "\""
        case .tracking(let hit):
            out += "\"kind\":\"track\",\"action\":\""
            out += hit.action.rawValue
            out += "\",\"messageId\":"
            JSONText.appendQuoted(hit.messageId.text, to: &out)
            out += ",\"deliveryId\":"
            JSONText.appendQuoted(hit.deliveryId, to: &out)
            if let key = hit.integrationKey {
                out += ",\"integrationKey\":"
                JSONText.appendQuoted(key, to: &out)
            }
            out += ",\"time\":\""
            out += hit.time.rfc3339
            out += "\""
        case .registration(let registration) where registration.sdkForm != nil:
            out += "\"kind\":\"register\",\"platform\":\""
            out += registration.platform.rawValue
            out += "\",\"sdkForm\":"
            JSONText.appendQuoted(registration.sdkForm ?? "", to: &out)
            out += ",\"time\":\""
            out += registration.time.rfc3339
            out += "\""
        case .registration(let registration):
            out += "\"kind\":\"register\",\"platform\":\""
            out += registration.platform.rawValue
            out += "\",\"integrationKey\":"
            JSONText.appendQuoted(registration.integrationKey, to: &out)
            out += ",\"registrationToken\":"
            JSONText.appendQuoted(registration.registrationToken, to: &out)
            for field in Registration.optionalTextFields {
                guard let value = registration[keyPath: field.keyPath] else { continue }
                out += ",\""
                out += field.name
                out += "\":"
                JSONText.appendQuoted(value, to: &out)
            }
            if let params = registration.additionalParams {
                out += ",\"additionalParams\":{"
                for (index, param) in params.enumerated() {
                    if index > 0 { out += "," }
                    JSONText.appendQuoted(param.name, to: &out)
                    out += ":"
                    switch param.value {
                    case .string(let text): JSONText.appendQuoted(text, to: &out)
                    case .number(let literal): out += literal
                    case .bool(let flag): out += flag ? "true" : "false"
                    }
                }
                out += "}"
            }
            out += ",\"time\":\""
            out += registration.time.rfc3339
            out += "\""
        }
        if let origin = event.origin {
            out += ",\"origin\":{\"sequence\":"
            out += String(origin.sequence)
            out += "}"
        }
        if let request = event.request {
            out += ",\"request\":{\"key\":"
            out += JSONText.quoted(request.key)
            out += ",\"index\":"
            out += String(request.index)
            out += "}"
        }
        if let tenant = event.tenant {
            out += ",\"tenant\":"
            JSONText.appendQuoted(tenant.text, to: &out)
        }
        if let chain = event.chain {
            out += ",\"relayOrigin\":"
            append(chain.first, to: &out)
            if let hop = chain.hop {
                out += ",\"relayHop\":"
                append(hop, to: &out)
            }
        }
        out += "}"
        return out
    }

    /// `{"relayId":"…","epoch":E,"sequence":S}`.
    private static func append(_ position: RelayPosition, to out: inout String) {
        out += "{\"relayId\":\""
        out += position.relayID
        out += "\",\"epoch\":"
        out += String(position.epoch)
        out += ",\"sequence\":"
        out += String(position.sequence)
        out += "}"
    }
}
