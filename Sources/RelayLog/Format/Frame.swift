public import RelayCore

/// Building a frame (header + compressed, perhaps encrypted, payload) from events, and decoding a frame's payload.
public enum Frame {
    /// Largest uncompressed payload put into one frame; a larger group commit is split into
    /// several frames written and synced together.
    public static let maximumUncompressedBytes = 1 << 20

    /// Most events put into one frame, whatever their size: a frame is what one damaged bit costs
    /// (its CRC fails and a reader skips to the next frame), and 1 MiB of small tracking events is
    /// some 47,000 of them. Within 4,096 events the compression ratio hardly changes: deflate's
    /// window is 32 KiB, less than the encoding of 4,096 tracking events, so a longer frame only
    /// saves its 36-byte header and the first window's warm-up.
    public static let maximumEvents = 4096

    /// The frame bytes (header then payload) for `events`, numbered from `firstSequence`.
    ///
    /// The payload is zlib-compressed at `compressionLevel`, or stored when that does not make it smaller.
    public static func encode<C: Collection<Event>>(_ events: C, firstSequence: UInt64, compressionLevel: Int32) -> [UInt8] {
        encodeWithHeader(
            plain: EventBinaryCodec.encode(events), eventCount: events.count, firstSequence: firstSequence, compressionLevel: compressionLevel,
            sealer: Never?.none
        ).bytes
    }

    /// The frame bytes for `events` as ``encode(_:firstSequence:compressionLevel:)`` makes them, then
    /// encrypted by `sealer` (``FrameEnvelope``) when there is one.
    static func encode<C: Collection<Event>>(
        _ events: C, firstSequence: UInt64, compressionLevel: Int32, sealer: FrameSealer?
    ) throws(FrameEncryptionError) -> [UInt8] {
        try encodeWithHeader(
            plain: EventBinaryCodec.encode(events), eventCount: events.count, firstSequence: firstSequence, compressionLevel: compressionLevel,
            sealer: sealer
        ).bytes
    }

    /// The frame bytes for an event encoding `plain`, and the header they start with; with a
    /// `sealer`, the payload is encrypted (an unencrypted log's frames cannot fail, `Never`).
    private static func encodeWithHeader<Sealing: FrameSealing>(
        plain: [UInt8], eventCount: Int, firstSequence: UInt64, compressionLevel: Int32, sealer: Sealing?
    ) throws(Sealing.Failure) -> (bytes: [UInt8], header: FrameHeader) {
        var codec = FrameHeader.Codec.zlib
        var stored: [UInt8]
        if compressionLevel > 0, let compressed = Zlib.compress(plain, level: compressionLevel), compressed.count < plain.count {
            stored = compressed
        } else {
            stored = plain
            codec = .stored
        }
        var header = FrameHeader(
            firstSequence: firstSequence, eventCount: UInt32(eventCount), uncompressedLength: UInt32(plain.count),
            storedLength: UInt32(stored.count), payloadCRC: 0, codec: codec
        )
        if let sealer { stored = try seal(stored, header: &header, sealer: sealer) }
        header.payloadCRC = Zlib.crc32(stored)
        var frame = header.encoded()
        frame.reserveCapacity(FrameHeader.size + stored.count)
        frame.append(contentsOf: stored)
        stored = []
        return (frame, header)
    }

    /// The envelope of `inner` (what an unencrypted frame of `header` stores), with `header` made
    /// that of an encrypted frame: flag and stored length set before sealing, since the envelope
    /// authenticates the header's first bytes (``FrameHeader/authenticatedPrefix()``).
    private static func seal<Sealing: FrameSealing>(_ inner: [UInt8], header: inout FrameHeader, sealer: Sealing) throws(Sealing.Failure) -> [UInt8] {
        header.isEncrypted = true
        header.storedLength = UInt32(inner.count + sealer.overhead)
        return try sealer.seal(inner, firstSequence: header.firstSequence, authenticatedPrefix: header.authenticatedPrefix())
    }

    /// The whole frame (header and envelope) of `header` holding `inner`, what an unencrypted frame
    /// stores, sealed by `sealer`: how `wal rekey` encrypts a frame in the clear or seals an opened
    /// one anew, its events untouched.
    static func seal(_ inner: [UInt8], header: FrameHeader, sealer: FrameSealer) throws(FrameEncryptionError) -> [UInt8] {
        var sealed = header
        let envelope = try seal(inner, header: &sealed, sealer: sealer)
        sealed.payloadCRC = Zlib.crc32(envelope)
        return sealed.encoded() + envelope
    }

    /// Decodes the events of a frame whose stored payload is `stored` (its CRC already checked),
    /// opening it with `keys` when it is encrypted.
    static func decodeEvents(_ header: FrameHeader, stored: UnsafeBufferPointer<UInt8>, keys: LogKeyRing?) throws(FrameDecodingError) -> [Event] {
        if header.isEncrypted {
            let inner: [UInt8]
            do {
                inner = try FrameEnvelope.open(stored, header: header, keys: keys)
            } catch {
                throw .encryption(error)
            }
            return try inner.withUnsafeBufferPointer { buffer throws(FrameDecodingError) in try decodeInner(header, inner: buffer) }
        }
        return try decodeInner(header, inner: stored)
    }

    /// Decodes what an unencrypted frame stores (or an encrypted one holds inside its envelope).
    private static func decodeInner(_ header: FrameHeader, inner: UnsafeBufferPointer<UInt8>) throws(FrameDecodingError) -> [Event] {
        do throws(EventBinaryCodec.DecodingError) {
            switch header.codec {
            case .stored:
                return try EventBinaryCodec.decode(inner, count: Int(header.eventCount))
            case .zlib:
                guard let plain = Zlib.decompress(inner, expectedCount: Int(header.uncompressedLength)) else {
                    throw EventBinaryCodec.DecodingError(offset: 0, reason: "zlib payload does not inflate to \(header.uncompressedLength) bytes")
                }
                return try EventBinaryCodec.decode(plain, count: Int(header.eventCount))
            }
        } catch {
            throw .events(error)
        }
    }
}

/// What encrypts a frame's payload: ``FrameSealer``, or `Never` for a log without encryption,
/// whose frames then cannot fail to encode.
protocol FrameSealing: Sendable {
    associatedtype Failure: Error
    /// Bytes the envelope adds.
    var overhead: Int { get }
    /// The envelope of `inner`, for the frame starting at `firstSequence` whose header begins with `authenticatedPrefix`.
    func seal(_ inner: [UInt8], firstSequence: UInt64, authenticatedPrefix: [UInt8]) throws(Failure) -> [UInt8]
}

extension FrameSealer: FrameSealing {}

extension Never: FrameSealing {
    var overhead: Int { 0 }
    func seal(_ inner: [UInt8], firstSequence: UInt64, authenticatedPrefix: [UInt8]) -> [UInt8] {
        switch self {}
    }
}

/// Why a frame's events could not be had.
enum FrameDecodingError: Error, Sendable, CustomStringConvertible {
    /// The (opened) payload does not decode to the header's events: damage the CRC did not catch.
    case events(EventBinaryCodec.DecodingError)
    /// The frame is encrypted and could not be opened: a missing or wrong key, not damage.
    case encryption(FrameEncryptionError)

    var description: String {
        switch self {
        case .events(let error): error.description
        case .encryption(let error): error.description
        }
    }
}

extension Frame {
    /// Where one frame of a group commit lies in the commit's bytes, and what it holds.
    struct Written {
        /// The frame's first byte within the group's bytes.
        var byteOffset: Int
        /// Its header (first sequence, event count, payload CRC).
        var header: FrameHeader
    }

    /// Frames for a group commit: the events of all `groups`, in order, numbered from
    /// `firstSequence`, split so that no frame holds more than ``maximumEvents`` events and no
    /// frame's uncompressed payload passes ``maximumUncompressedBytes`` by more than one event.
    /// Returns the bytes and where each frame starts in them.
    ///
    /// Events are encoded straight from the appenders' arrays (this runs for every commit, and
    /// copying each event into one array first cost more than encoding it).
    ///
    /// With `tallyingTenants`, it also returns the bytes of each tenant's events before compression
    /// (the default tenant's are not tallied; without it, none are).
    static func encodeGroup(_ groups: [[Event]], firstSequence: UInt64, compressionLevel: Int32, tallyingTenants: Bool = false) -> (
        bytes: [UInt8], frames: [Written], tenantBytes: [TenantName: Int64]
    ) {
        encodeGroup(groups, firstSequence: firstSequence, compressionLevel: compressionLevel, sealer: Never?.none, tallyingTenants: tallyingTenants)
    }

    /// ``encodeGroup(_:firstSequence:compressionLevel:tallyingTenants:)`` with each frame sealed by
    /// `sealer` when there is one.
    static func encodeGroup<Sealing: FrameSealing>(
        _ groups: [[Event]], firstSequence: UInt64, compressionLevel: Int32, sealer: Sealing?, tallyingTenants: Bool = false
    ) throws(Sealing.Failure) -> (bytes: [UInt8], frames: [Written], tenantBytes: [TenantName: Int64]) {
        var tenantBytes: [TenantName: Int64] = [:]
        var output: [UInt8] = []
        var frames: [Written] = []
        var next = firstSequence
        var writer = BinaryWriter(capacity: min(maximumUncompressedBytes + 4096, groups.reduce(0) { $0 + $1.count } * 32))
        var previousTime: Int64 = 0
        var count = 0
        func flush() throws(Sealing.Failure) {
            guard count > 0 else { return }
            let (frame, header) = try encodeWithHeader(
                plain: writer.bytes, eventCount: count, firstSequence: next, compressionLevel: compressionLevel, sealer: sealer)
            frames.append(Written(byteOffset: output.count, header: header))
            output.append(contentsOf: frame)
            next += UInt64(count)
            writer.bytes.removeAll(keepingCapacity: true)
            previousTime = 0
            count = 0
        }
        for group in groups {
            for event in group {
                let before = writer.bytes.count
                EventBinaryCodec.encode(event, into: &writer, previousTime: &previousTime)
                if tallyingTenants, let tenant = event.tenant { tenantBytes[tenant, default: 0] += Int64(writer.bytes.count - before) }
                count += 1
                if count == maximumEvents || writer.bytes.count >= maximumUncompressedBytes { try flush() }
            }
        }
        try flush()
        return (output, frames, tenantBytes)
    }
}
