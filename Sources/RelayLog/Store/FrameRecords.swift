package import RelayCore

/// One frame of a group commit kept as a record of its own: how a store that keeps frames as rows
/// (PostgreSQL's `relay_log_frames`) holds them. The bytes are the frame exactly as a segment file
/// holds it (docs/wal-format.md: header, CRC, zlib body, the encryption envelope).
package struct FrameRecord: Sendable, Equatable {
    /// The sequence number of its first event.
    package var firstSequence: UInt64
    /// Its events.
    package var eventCount: Int
    /// The whole frame: header and stored payload.
    package var bytes: [UInt8]

    /// A record of `bytes` holding `eventCount` events from `firstSequence`.
    package init(firstSequence: UInt64, eventCount: Int, bytes: [UInt8]) {
        self.firstSequence = firstSequence
        self.eventCount = eventCount
        self.bytes = bytes
    }
}

extension FrameRecord {
    /// Its frame's header and stored payload, when the header parses, matches the record's
    /// columns and size, and the payload's CRC holds; `nil` for a damaged record.
    package var checkedFrame: (header: FrameHeader, stored: [UInt8])? {
        guard bytes.count >= FrameHeader.size,
            case .success(let header) = bytes.withUnsafeBufferPointer({ FrameHeader.decode(UnsafeBufferPointer(rebasing: $0[0..<FrameHeader.size])) }),
            header.frameSize == bytes.count, header.firstSequence == firstSequence, Int(header.eventCount) == eventCount
        else { return nil }
        let stored = Array(bytes[FrameHeader.size...])
        guard Zlib.crc32(stored) == header.payloadCRC else { return nil }
        return (header, stored)
    }
}

/// Encodes a group commit into frame records and decodes a record back into its events, with the
/// log's compression and encryption: the frame format of the segment files, one record per frame.
package struct FrameRecordCodec: Sendable {
    /// Seals new frames with the newest key (with a key file).
    private var sealer: FrameSealer?
    /// The keys that open frames.
    package let keys: LogKeyRing?
    private let compressionLevel: Int32

    /// A codec with `configuration`'s compression level and keys.
    package init(configuration: LogConfiguration) {
        keys = configuration.encryption
        compressionLevel = configuration.compressionLevel
        sealer = configuration.encryption.map { FrameSealer(key: $0.newest) }
    }

    /// A codec that only reads: it opens frames sealed with `keys` (and, with them, would seal
    /// new ones with the newest).
    package init(keys: LogKeyRing?) {
        self.keys = keys
        compressionLevel = LogConfiguration.defaultCompressionLevel
        sealer = keys.map { FrameSealer(key: $0.newest) }
    }

    /// The frames of `group`, numbered from its first sequence, and each tenant's bytes before
    /// compression when the group tallies them.
    ///
    /// - Throws: ``LogError/sealingFailed(_:)`` when a frame cannot be sealed.
    package func encode(_ group: FrameGroup) throws(LogError) -> (records: [FrameRecord], tenantBytes: [TenantName: Int64]) {
        let encoded: (bytes: [UInt8], frames: [Frame.Written], tenantBytes: [TenantName: Int64])
        if let sealer {
            do {
                encoded = try Frame.encodeGroup(
                    group.batches, firstSequence: group.firstSequence, compressionLevel: compressionLevel, sealer: sealer,
                    tallyingTenants: group.tallyingTenants)
            } catch {
                throw .sealingFailed(error)
            }
        } else {
            encoded = Frame.encodeGroup(
                group.batches, firstSequence: group.firstSequence, compressionLevel: compressionLevel, tallyingTenants: group.tallyingTenants)
        }
        var records: [FrameRecord] = []
        records.reserveCapacity(encoded.frames.count)
        for (index, frame) in encoded.frames.enumerated() {
            let end = index + 1 < encoded.frames.count ? encoded.frames[index + 1].byteOffset : encoded.bytes.count
            records.append(
                FrameRecord(
                    firstSequence: frame.header.firstSequence, eventCount: Int(frame.header.eventCount),
                    bytes: Array(encoded.bytes[frame.byteOffset..<end])))
        }
        return (records, encoded.tenantBytes)
    }

    /// After a commit that did not become durable: the next may seal other events under the same
    /// first sequence number, so it draws a new salt (``FrameSealer/renew()``).
    package mutating func renewAfterFailure() {
        sealer?.renew()
    }

    /// What decoding one record found.
    package enum Decoded: Sendable {
        /// The record's events, numbered.
        case events([SequencedEvent])
        /// The record is damaged (a bad header, a CRC mismatch, undecodable events): reading goes
        /// on after it.
        case damaged(LogDamage)
    }

    /// The events of `record` (named `place` in damage reports), opened with ``keys``.
    ///
    /// - Throws: ``LogError/unreadableFrame(_:segment:offset:)`` when it is sealed under a key
    ///   this codec lacks: not damage, as nothing after it may be read either.
    package func decode(_ record: FrameRecord, place: String) throws(LogError) -> Decoded {
        let bytes = record.bytes
        let whole = 0..<Int64(bytes.count)
        func damaged(_ kind: LogDamage.Kind, _ reason: String) -> Decoded {
            .damaged(LogDamage(kind: kind, segment: place, range: whole, reason: reason))
        }
        guard bytes.count >= FrameHeader.size else { return damaged(.corruptFrame, "a record of \(bytes.count) bytes holds no frame header") }
        let header: FrameHeader
        switch bytes.withUnsafeBufferPointer({ FrameHeader.decode(UnsafeBufferPointer(rebasing: $0[0..<FrameHeader.size])) }) {
        case .success(let value): header = value
        case .failure(let problem): return damaged(.corruptFrame, problem.description)
        }
        guard header.frameSize == bytes.count else {
            return damaged(.corruptFrame, "the header says \(header.frameSize) bytes, the record holds \(bytes.count)")
        }
        guard header.firstSequence == record.firstSequence, Int(header.eventCount) == record.eventCount else {
            return damaged(.corruptFrame, "the header holds events \(header.firstSequence)+\(header.eventCount), the record's columns say otherwise")
        }
        let stored = Array(bytes[FrameHeader.size...])
        guard Zlib.crc32(stored) == header.payloadCRC else { return damaged(.corruptFrame, "payload CRC mismatch") }
        let events: [Event]
        do {
            events = try stored.withUnsafeBufferPointer { buffer throws(FrameDecodingError) in
                try Frame.decodeEvents(header, stored: buffer, keys: keys)
            }
        } catch {
            switch error {
            case .encryption(let failure): throw .unreadableFrame(failure, segment: place, offset: 0)
            case .events(let failure): return damaged(.undecodable, failure.description)
            }
        }
        return .events(events.enumerated().map { SequencedEvent(sequence: header.firstSequence + UInt64($0.offset), event: $0.element) })
    }
}
