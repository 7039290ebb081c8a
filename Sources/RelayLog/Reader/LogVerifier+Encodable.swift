extension LogVerifier.Report: Encodable {
    private enum CodingKeys: String, CodingKey {
        case segments, frames, events, bytes, preallocatedBytes, bytesPerEvent, corruptFrames, tornTails, supersededFrames
        case missingSequences, firstSequence, lastSequence, firstEventTime, damage, clean, relayId, epoch
        case encryptedFrames, unopenedFrames, framesByKeyId
    }

    /// What `wal verify --json` prints; `firstSequence`, `lastSequence` and `firstEventTime` are `null` for an empty
    /// log, `relayId` and `epoch` for a directory whose log was never opened. `encryptedFrames` counts the
    /// encrypted frames, `unopenedFrames` those left unopened for want of keys, and `framesByKeyId`
    /// the frames each key id sealed (`{}` for a log in the clear).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(segments, forKey: .segments)
        try container.encode(frames, forKey: .frames)
        try container.encode(events, forKey: .events)
        try container.encode(bytes, forKey: .bytes)
        try container.encode(preallocatedBytes, forKey: .preallocatedBytes)
        try container.encode((bytesPerEvent * 100).rounded() / 100, forKey: .bytesPerEvent)
        try container.encode(corruptFrames, forKey: .corruptFrames)
        try container.encode(tornTails, forKey: .tornTails)
        try container.encode(supersededFrames, forKey: .supersededFrames)
        try container.encode(missingSequences, forKey: .missingSequences)
        try container.encode(firstSequence, forKey: .firstSequence)
        try container.encode(lastSequence, forKey: .lastSequence)
        try container.encode(firstEventTime?.rfc3339, forKey: .firstEventTime)
        try container.encode(damage, forKey: .damage)
        try container.encode(isClean, forKey: .clean)
        try container.encode(identity?.relayID, forKey: .relayId)
        try container.encode(identity?.epoch.number, forKey: .epoch)
        try container.encode(encryptedFrames, forKey: .encryptedFrames)
        try container.encode(unopenedFrames, forKey: .unopenedFrames)
        try container.encode(framesByKeyID, forKey: .framesByKeyId)
    }
}

extension LogDamage: Encodable {
    private enum CodingKeys: String, CodingKey {
        case kind, segment, offset, bytes, reason
    }

    /// `{"kind","segment","offset","bytes","reason"}`: where the damaged bytes are and why.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind.rawValue, forKey: .kind)
        try container.encode(segment, forKey: .segment)
        try container.encode(range.lowerBound, forKey: .offset)
        try container.encode(range.count, forKey: .bytes)
        try container.encode(reason, forKey: .reason)
    }
}
