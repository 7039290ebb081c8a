import RelayCore

/// `identity.json`: the file format of ``RelayIdentity`` (docs/relay-identity.md).
extension RelayIdentity {
    /// The file's text: one JSON object, keys in a fixed order, a newline at the end.
    public var json: String {
        let epochs = epochs.map { epoch in
            "{\"number\":\(epoch.number),\"firstSequence\":\(epoch.firstSequence),\"started\":\(JSONText.quoted(epoch.started)),"
                + "\"reason\":\(JSONText.quoted(epoch.reason))}"
        }
        return "{\"format\":1,\"relayId\":\(JSONText.quoted(relayID)),\"epochs\":[\(epochs.joined(separator: ","))],"
            + "\"directory\":{\"device\":\(directory.device),\"inode\":\(directory.inode)}}\n"
    }

    /// Reads the file's bytes; the failure says what is wrong with them.
    static func parse(_ bytes: [UInt8]) -> Result<RelayIdentity, IdentityFileError> {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            return .failure(IdentityFileError(description: "not JSON: \(error)"))
        }
        guard case .object(let members) = value else { return .failure(IdentityFileError(description: "not a JSON object")) }
        func member(_ name: String) -> JSONValue? { members.first { $0.name == name }?.value }
        func integer(_ value: JSONValue?) -> UInt64? {
            guard case .number(let text)? = value else { return nil }
            return UInt64(text)
        }
        guard integer(member("format")) == 1 else { return .failure(IdentityFileError(description: "format is not 1")) }
        guard case .string(let relayID)? = member("relayId"), relayID.utf8.count == 36 else {
            return .failure(IdentityFileError(description: "relayId is not a UUID"))
        }
        guard case .array(let epochValues)? = member("epochs"), !epochValues.isEmpty else {
            return .failure(IdentityFileError(description: "epochs is not a non-empty array"))
        }
        var epochs: [Epoch] = []
        for value in epochValues {
            guard case .object(let fields) = value else { return .failure(IdentityFileError(description: "an epoch is not an object")) }
            func field(_ name: String) -> JSONValue? { fields.first { $0.name == name }?.value }
            guard let number = integer(field("number")).flatMap(UInt32.init(exactly:)), let first = integer(field("firstSequence")),
                case .string(let started)? = field("started"), case .string(let reason)? = field("reason")
            else { return .failure(IdentityFileError(description: "an epoch lacks number, firstSequence, started or reason")) }
            guard number == UInt32(epochs.count + 1), first >= (epochs.last?.firstSequence ?? 1) else {
                return .failure(IdentityFileError(description: "epochs are not numbered 1, 2, … with rising first sequences"))
            }
            epochs.append(Epoch(number: number, firstSequence: first, started: started, reason: reason))
        }
        guard case .object(let directoryFields)? = member("directory"),
            let device = integer(directoryFields.first { $0.name == "device" }?.value),
            let inode = integer(directoryFields.first { $0.name == "inode" }?.value)
        else { return .failure(IdentityFileError(description: "directory lacks device or inode")) }
        return .success(RelayIdentity(relayID: relayID, epochs: epochs, directory: FileIdentity(device: device, inode: inode)))
    }
}

/// Why `identity.json` could not be read.
struct IdentityFileError: Error, Sendable, CustomStringConvertible {
    var description: String
}
