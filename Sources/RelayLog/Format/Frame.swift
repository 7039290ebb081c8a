public import RelayCore

/// Building a frame (header + compressed payload) from events, and decoding a frame's payload.
public enum Frame {
    /// Largest uncompressed payload put into one frame; a larger group commit is split into
    /// several frames written and synced together.
    public static let maximumUncompressedBytes = 1 << 20

    /// The frame bytes (header then payload) for `events`, numbered from `firstSequence`.
    ///
    /// The payload is zlib-compressed at `compressionLevel`, or stored when that does not make it smaller.
    public static func encode<C: Collection<Event>>(_ events: C, firstSequence: UInt64, compressionLevel: Int32) -> [UInt8] {
        let plain = EventBinaryCodec.encode(events)
        var codec = FrameHeader.Codec.zlib
        var stored: [UInt8]
        if compressionLevel > 0, let compressed = Zlib.compress(plain, level: compressionLevel), compressed.count < plain.count {
            stored = compressed
        } else {
            stored = plain
            codec = .stored
        }
        let header = FrameHeader(
            firstSequence: firstSequence, eventCount: UInt32(events.count), uncompressedLength: UInt32(plain.count),
            storedLength: UInt32(stored.count), payloadCRC: Zlib.crc32(stored), codec: codec
        )
        var frame = header.encoded()
        frame.reserveCapacity(FrameHeader.size + stored.count)
        frame.append(contentsOf: stored)
        stored = []
        return frame
    }

    /// Decodes the events of a frame whose stored payload is `stored` (its CRC already checked).
    public static func decodeEvents(_ header: FrameHeader, stored: UnsafeBufferPointer<UInt8>) throws(EventBinaryCodec.DecodingError) -> [Event] {
        switch header.codec {
        case .stored:
            return try EventBinaryCodec.decode(stored, count: Int(header.eventCount))
        case .zlib:
            guard let plain = Zlib.decompress(stored, expectedCount: Int(header.uncompressedLength)) else {
                throw EventBinaryCodec.DecodingError(offset: 0, reason: "zlib payload does not inflate to \(header.uncompressedLength) bytes")
            }
            return try EventBinaryCodec.decode(plain, count: Int(header.eventCount))
        }
    }
}

extension Frame {
    /// Frames for a group commit: the events of all `groups`, in order, numbered from
    /// `firstSequence`, split so that no frame's uncompressed payload passes
    /// ``maximumUncompressedBytes`` by more than one event.
    static func encodeGroup(_ groups: [[Event]], firstSequence: UInt64, compressionLevel: Int32) -> (bytes: [UInt8], frames: Int) {
        var output: [UInt8] = []
        var frames = 0
        var chunk: [Event] = []
        var chunkBytes = 0
        var next = firstSequence
        func flush() {
            guard !chunk.isEmpty else { return }
            output.append(contentsOf: encode(chunk, firstSequence: next, compressionLevel: compressionLevel))
            next += UInt64(chunk.count)
            frames += 1
            chunk.removeAll(keepingCapacity: true)
            chunkBytes = 0
        }
        for group in groups {
            for event in group {
                chunk.append(event)
                chunkBytes += event.estimatedEncodedBytes
                if chunkBytes >= maximumUncompressedBytes { flush() }
            }
        }
        flush()
        return (output, frames)
    }
}

extension Event {
    /// A cheap upper-bound-ish guess of the binary encoding's size, for splitting frames.
    var estimatedEncodedBytes: Int {
        switch self {
        case .tracking(let hit):
            24 + hit.deliveryId.utf8.count + (hit.integrationKey?.utf8.count ?? 0) + hit.messageId.text.utf8.count
        case .registration(let registration):
            64 + registration.integrationKey.utf8.count + registration.registrationToken.utf8.count
                + Registration.optionalTextFields.reduce(0) { $0 + (registration[keyPath: $1.keyPath]?.utf8.count ?? 0) }
                + (registration.additionalParams ?? []).reduce(0) { $0 + $1.name.utf8.count + $1.value.wireText.utf8.count + 8 }
        }
    }
}
