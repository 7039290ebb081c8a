public import RelayCore

/// Why the write-ahead log refused or failed an operation.
///
/// An append that throws was **not** acknowledged: none of its events may be assumed durable, and
/// the caller should report the failure (HTTP 503, a failed ingest) so the sender retries.
public enum LogError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The log would pass its size limit (`--max-wal-bytes`), even after the segments every cursor
    /// has passed made room. Consumers must catch up or the limit must be raised.
    case logFull(usedBytes: Int64, limitBytes: Int64)
    /// The tenant's events its own destinations have not taken reached its share of the log
    /// (`max-wal-bytes` of `[tenant.NAME]`); other tenants' appends are still taken.
    case tenantFull(tenant: TenantName, usedBytes: Int64, limitBytes: Int64)
    /// Too many events are already waiting for a group commit.
    case overloaded(pendingEvents: Int, limit: Int)
    /// Writing the frame failed (e.g. disk full); nothing was acknowledged and the segment was cut
    /// back to its last verified frame.
    case writeFailed(FileSystemError)
    /// fdatasync failed: the batch is not durable. The segment is abandoned (its descriptor is never
    /// synced again) and the next append starts a new segment.
    case syncFailed(FileSystemError)
    /// Another file operation failed (opening, rolling, recovering).
    case fileSystem(FileSystemError, context: String)
    /// Another process holds the log's lock file.
    case locked(path: String)
    /// The log was closed.
    case closed
    /// A cursor name that is not 1 to 96 letters, digits, `-` or `_`.
    case invalidCursorName(String)
    /// A consumer that was not declared when the log was opened asked for its position or moved
    /// it (``WriteAheadLog/open(dataDirectory:configuration:consumers:fileSystem:logger:wallClock:)``).
    case undeclaredConsumer(String, declared: [String])
    /// The archive already holds a different file under a segment's name (another relay's
    /// segments, or a damaged copy). Nothing was overwritten and the segment stays in the log.
    case archiveConflict(segment: String, archiveDirectory: String)
    /// An encrypted frame could not be opened: its key is not in the key file, or is not the key
    /// that sealed it. Not damage: the reader stops there, having changed nothing, until it is
    /// given the key.
    case unreadableFrame(FrameEncryptionError, segment: String, offset: Int64)
    /// Encrypting a commit's frames failed; nothing in it was acknowledged.
    case sealingFailed(FrameEncryptionError)
    /// The plan of an unfinished erasure (``ErasurePlan``) does not decode.
    case unreadableErasurePlan(path: String, reason: String)
    /// The database keeping the log's frames (``FrameStore``) cannot be written or read now (no
    /// writable primary answers, a commit was not confirmed): nothing of the commit was
    /// acknowledged, and the store reconnects at its next call.
    case storeUnavailable(String)

    public var description: String {
        switch self {
        case .logFull(let used, let limit):
            "log full: \(used) bytes used, limit \(limit) bytes (--max-wal-bytes); let consumers catch up or raise the limit"
        case .tenantFull(let tenant, let used, let limit):
            "tenant \(tenant.text)'s share of the log is full: \(used) bytes of its events its hosts have not taken, limit \(limit) bytes (max-wal-bytes of [tenant.\(tenant.text)]); retry once its hosts catch up, or raise the limit"
        case .overloaded(let pending, let limit):
            "overloaded: \(pending) events already wait for a commit (limit \(limit)); retry later"
        case .writeFailed(let error):
            "write failed, nothing acknowledged: \(error)"
        case .syncFailed(let error):
            "fdatasync failed, nothing acknowledged; the segment was abandoned and the next append uses a new one: \(error)"
        case .fileSystem(let error, let context):
            "\(context): \(error)"
        case .locked(let path):
            "the log is in use by another process (lock \(path) is held); stop it or use another --data-dir"
        case .closed:
            "the log is closed"
        case .invalidCursorName(let name):
            "invalid cursor name \(name) (use 1 to 96 letters, digits, '-' or '_')"
        case .undeclaredConsumer(let name, let declared):
            "the log was opened without declaring the consumer \(name) (declared: \(declared.isEmpty ? "none" : declared.joined(separator: ", "))); declare every consumer when the log opens, so that retention knows it from the start"
        case .archiveConflict(let segment, let directory):
            "the archive \(directory) already holds a different \(segment) (another relay's archive, or a damaged copy); the segment stays in the log: give each relay its own archive directory, or move the other file away"
        case .unreadableFrame(let error, let segment, let offset):
            "cannot read the frame of segment \(segment) at offset \(offset): \(error); nothing was changed"
        case .sealingFailed(let error):
            "encrypting a commit failed, nothing acknowledged: \(error)"
        case .unreadableErasurePlan(let path, let reason):
            "the plan of an unfinished erasure, \(path), cannot be read (\(reason)); nothing was changed: restore it from a backup, or, to give that erasure up, move it away and run the same erase again"
        case .storeUnavailable(let reason):
            "the log's database cannot take the commit now, nothing acknowledged: \(reason); the relay reconnects on its own, retry shortly"
        }
    }
}
