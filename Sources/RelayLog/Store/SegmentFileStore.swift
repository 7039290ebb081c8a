import NIOConcurrencyHelpers
import RelayCore
import RelayIO

/// The log's first ``FrameStore``: frames in segment files under `<data-dir>/wal/` (the format of
/// docs/wal-format.md), written and synced on a thread of the store's own.
///
/// What belongs to files stays here and in the types it drives: opening with recovery and torn-tail
/// repair (``LogRecovery``, SegmentFileStore+Open.swift), the quarantine, segment rolls and
/// preallocation (``SegmentWriter``), the archive (``SegmentArchive``), and the rewrite lock that
/// keeps erasures and `wal rekey` apart from deletions (``SegmentRewriteLock``).
actor SegmentFileStore: FrameStore, BlockingActor {
    /// The thread every append, drop, open and close runs on (`wal-writer`).
    nonisolated let executor: BlockingExecutor
    /// The log directory.
    nonisolated let walDirectory: String
    /// The file layer in use.
    nonisolated let fileSystem: any FileSystem
    /// The configuration the log was opened with.
    nonisolated let configuration: LogConfiguration
    /// Decodes each frame once for all the readers the store makes; also keeps written events
    /// for the consumers at the log's end (``LogConfiguration/writtenEventsKept``).
    nonisolated let sharedDecoder: SharedFrameDecoder
    /// The registrations being erased, which the store's readers hand out as erased entries.
    nonisolated let erasureMask: ErasureMask
    /// The thread that copies segments into the archive, so that appends go on meanwhile (only
    /// with an archive directory).
    private nonisolated let archiveIO: BlockingExecutor?
    /// Set by ``sealActive()``; the next append seals the active segment first.
    private nonisolated let sealRequested = NIOLockedValueBox(false)
    /// The segment writer: the active segment, rolls, the size limit, deletions.
    private var writer: SegmentWriter
    /// The log's lock file, released by ``close()``.
    private let lock: (any FileHandle)?
    /// Every event below it is durable.
    private var durableEnd: UInt64

    init(
        writer: SegmentWriter, durableEnd: UInt64, lock: (any FileHandle)?, executor: BlockingExecutor, walDirectory: String,
        configuration: LogConfiguration, sharedDecoder: SharedFrameDecoder, erasureMask: ErasureMask
    ) {
        self.writer = writer
        self.durableEnd = durableEnd
        self.lock = lock
        self.executor = executor
        self.walDirectory = walDirectory
        self.fileSystem = writer.fileSystem
        self.configuration = configuration
        self.sharedDecoder = sharedDecoder
        self.erasureMask = erasureMask
        self.archiveIO = configuration.archiveDirectory == nil ? nil : BlockingExecutor(name: "wal-archive")
    }

    /// The extent of `writer` with `durableEnd`: what the log keeps of the store between calls.
    static func extent(of writer: SegmentWriter, durableEnd: UInt64) -> FrameStoreExtent {
        let figures = writer.figures
        return FrameStoreExtent(durableEnd: durableEnd, spans: writer.segments, dataBytes: figures.dataBytes, diskBytes: figures.diskBytes)
    }

    var extent: FrameStoreExtent { Self.extent(of: writer, durableEnd: durableEnd) }

    func append(_ group: FrameGroup, room: FrameRoom) -> FrameAppendOutcome {
        if sealRequested.withLockedValue({ requested in
            defer { requested = false }
            return requested
        }) {
            writer.sealActive()
        }
        var dropped = room.handedOff.isEmpty ? FrameDropReport() : writer.remove(room.handedOff, archiving: false)
        let first = group.firstSequence
        let result: Result<FrameAppend, LogError>
        do throws(LogError) {
            let (bytes, frames, tenantBytes) = try writer.encode(
                group.batches, firstSequence: first, compressionLevel: configuration.compressionLevel, tallyingTenants: group.tallyingTenants)
            let placement = try writer.commit(bytes, firstSequence: first, passedBelow: room.passedBelow, retention: &dropped)
            // Before the durable end moves, so a consumer woken by it finds them.
            if configuration.writtenEventsKept > 0 {
                sharedDecoder.keep(written: frames, of: group.batches, segment: placement.segment, at: placement.offset)
            }
            durableEnd = first + UInt64(group.eventCount)
            result = .success(
                FrameAppend(
                    durableEnd: durableEnd, bytes: bytes.count, frames: frames.count, synchronizeDuration: placement.synchronizeDuration,
                    tenantBytes: tenantBytes))
        } catch {
            // The next commit may seal other events under the same first sequence number.
            writer.sealer?.renew()
            result = .failure(error)
        }
        return FrameAppendOutcome(result: result, dropped: dropped, extent: extent)
    }

    func dropFrames(_ spans: [FrameDrop]) -> FrameDropOutcome {
        // The archive copies were made by `archive(_:)`, off this thread.
        FrameDropOutcome(report: writer.remove(spans, archiving: false), extent: extent)
    }

    nonisolated var keepsArchive: Bool { archiveIO != nil }

    nonisolated func archive(_ spans: [FrameDrop]) async -> (archived: [FrameDrop], failure: LogError?) {
        guard let archiveDirectory = configuration.archiveDirectory, let archiveIO, !spans.isEmpty else { return (spans, nil) }
        // Copying a segment takes a while (64 MiB by default): not on the writer's thread.
        let (archive, directory) = (SegmentArchive(directory: archiveDirectory, fileSystem: fileSystem), walDirectory)
        var archived: [FrameDrop] = []
        for item in spans {
            let name = item.segment.name
            do {
                // Under the rewrite lock: a copy begun before an erasure renamed its rewrite over
                // the segment must not land in the archive after the erasure's pass there.
                try await archiveIO.run { () throws(LogError) in
                    _ = try SegmentRewriteLock.holding(walDirectory: directory, fileSystem: archive.fileSystem) { () throws(LogError) in
                        try archive.store(segmentAt: "\(directory)/\(name)", name: name)
                    }
                }
                archived.append(item)
            } catch {
                return (archived, error)
            }
        }
        return (archived, nil)
    }

    nonisolated func readFrames(from sequence: UInt64, archiveDirectory: String?) -> any FrameReader {
        LogReader(
            walDirectory: walDirectory, archiveDirectory: archiveDirectory, fileSystem: fileSystem, from: sequence,
            keys: configuration.encryption, sharedDecoder: sharedDecoder, damageLogger: nil, erasures: erasureMask)
    }

    nonisolated func firstEvent(from sequence: UInt64, below limit: UInt64) throws(LogError) -> SequencedEvent? {
        try LogExtent.firstEvent(walDirectory: walDirectory, fileSystem: fileSystem, from: sequence, below: limit, keys: configuration.encryption)
    }

    nonisolated func sealActive() {
        sealRequested.withLockedValue { $0 = true }
    }

    func close() {
        writer.close()
        lock?.close()
    }
}
