/// Rewrites one segment file frame by frame, crash-safely: what `wal rekey` and an erasure share.
///
/// Every frame is handed to a change, which returns the frame's new bytes or `nil` to keep it as
/// it is; damaged ranges are copied as they were (no reader can open them). When some frame
/// changed, the new bytes go to `<name>.wal.tmp` (which the log removes on open and an archive's
/// readers ignore), are fdatasync'ed, renamed over the segment, and the directory is fsync'ed: a
/// crash leaves the old file or the new one. The 32-byte segment header, sequence numbers and
/// event counts stay as they were; frames' offsets after a changed one move.
enum SegmentRewriter {
    /// What rewriting one segment did.
    struct Outcome {
        /// Whether the file was replaced (some frame changed).
        var rewritten = false
        /// Frames changed.
        var framesChanged = 0
        /// Damaged ranges copied as they were.
        var damagedRanges = 0
        /// The file's size after.
        var bytes: Int64 = 0
    }

    /// Rewrites the segment `name` of `directory` with `change`; `nil` when the file is gone
    /// (the log's retention removed it).
    ///
    /// `change(header, offset, stored)` gets each frame's header, offset and stored payload (CRC
    /// checked) and returns the whole new frame (header and payload) or `nil`.
    ///
    /// - Throws: what `change` throws (nothing is written then), ``LogError/fileSystem(_:context:)``
    ///   when the file cannot be read or replaced (it is then unchanged).
    static func rewrite(
        name: String, directory: String, fileSystem: any FileSystem,
        change: (FrameHeader, Int64, [UInt8]) throws(LogError) -> [UInt8]?
    ) throws(LogError) -> Outcome? {
        let path = "\(directory)/\(name)"
        let handle: any FileHandle
        do {
            handle = try fileSystem.open(path, create: false)
        } catch  where error.errno == LogLayout.noSuchFileErrno {
            return nil
        } catch {
            throw .fileSystem(error, context: "opening \(path)")
        }
        defer { handle.close() }
        var outcome = Outcome()
        var output: [UInt8]
        do {
            output = try handle.read(at: 0, count: SegmentHeader.size)
            var walker = try FrameWalker(handle: handle)
            walking: while true {
                switch try walker.next() {
                case .frame(let header, let offset, let stored):
                    if let changed = try change(header, offset, stored) {
                        output += changed
                        outcome.framesChanged += 1
                    } else {
                        output += header.encoded() + stored
                    }
                case .damaged(let range, _), .damagedTail(let range, _):
                    outcome.damagedRanges += 1
                    output += try handle.read(at: range.lowerBound, count: Int(range.count))
                case .end:
                    break walking
                }
            }
        } catch let error as LogError {
            throw error
        } catch let error as FileSystemError {
            throw .fileSystem(error, context: "reading \(path)")
        } catch {
            throw .fileSystem(FileSystemError(operation: "read", path: path, errno: 0, reason: "\(error)"), context: "rewriting \(path)")
        }
        outcome.bytes = Int64(output.count)
        guard outcome.framesChanged > 0 else { return outcome }
        do {
            try fileSystem.writeAtomically(output, to: path, directory: directory)
        } catch {
            throw .fileSystem(error, context: "rewriting \(path) (it is unchanged; run the command again)")
        }
        outcome.rewritten = true
        return outcome
    }

    /// The first sequence numbers of the segments in `directory`, in order.
    static func segmentStarts(in directory: String, fileSystem: any FileSystem) throws(LogError) -> [UInt64] {
        do {
            return try fileSystem.listDirectory(directory).compactMap(SegmentHeader.firstSequence(fromFileName:)).sorted()
        } catch {
            throw .fileSystem(error, context: "listing \(directory)")
        }
    }
}
