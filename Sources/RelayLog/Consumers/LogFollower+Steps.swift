import Logging
import RelayCore

extension LogFollower {
    /// The follower's reading taken one batch at a time, for a consumer whose own loop decides
    /// when to read and up to where: the upload lanes (their state machines choose the limit,
    /// and a lane sent back by a central relay moves to an earlier position), the server's
    /// read-backs of what it just appended (bounded by the durable end they found), and the
    /// offline commands (through ``StoredLog/steps(from:damageLogger:)``, files or a stream in PostgreSQL).
    ///
    /// It is a plain value, owned by one consumer and moved to the thread that reads (it reads
    /// files). Its reads are the store's: damage is passed over and reported in
    /// ``LogReadBatch/damage``, and a reader of an open log decodes through the log's shared
    /// decoder, which logs each damage once. The store's reader (``FrameReader``) stays inside RelayLog.
    package struct Steps: Sendable {
        private var reader: any FrameReader

        /// The sequence number of the next event a read returns (or the first after it, when
        /// that one is missing from the log).
        package var position: UInt64 { reader.position }

        /// Steps through the open `log` from `position`, decoding through the log's shared
        /// decoder; with `archiveDirectory`, archived segments fill in those the log no longer has.
        /// Read below the log's ``WriteAheadLog/durableSequence`` to read only what is acknowledged.
        package init(log: WriteAheadLog, from position: UInt64, archiveDirectory: String? = nil) {
            reader = log.reader(from: position, archiveDirectory: archiveDirectory)
        }

        /// Steps through the log files themselves (a log this process has not opened).
        init(reader: any FrameReader) {
            self.reader = reader
        }

        /// Reads up to `maximumEvents` events whose sequence numbers are below `limit`; fewer (possibly
        /// none) when the log holds no more yet.
        ///
        /// - Throws: ``LogError`` as ``FrameReader/read(maximumEvents:below:)`` does; for the segment
        ///   files, at a frame whose key is missing (when nothing was read before it), or when a
        ///   segment cannot be read.
        package mutating func read(maximumEvents: Int, below limit: UInt64 = .max) throws(LogError) -> LogReadBatch {
            try reader.read(maximumEvents: maximumEvents, below: limit)
        }

        /// Closes the segment under way and goes on from `position` in `log` (a lane asked for
        /// earlier events by its destination).
        package mutating func move(to position: UInt64, in log: WriteAheadLog) {
            reader.close()
            reader = log.reader(from: position)
        }

        /// Closes the segment under way; a later read opens it again.
        package mutating func close() {
            reader.close()
        }
    }
}
