/// Whether a forwarding lane may send to its host now: on a log kept in PostgreSQL, only while
/// this relay holds the stream's lease, so that two relays never forward one stream at once.
///
/// Lanes ask before every request they send; a lane without a permit always may. A lane starts
/// under one tenure (the lease's token when it started, or none yet) and sends only while the
/// permit's tenure is that one: when the lease changed hands meanwhile (another relay forwarded
/// the stream and moved its cursors), the lane starts again from its cursor in the log.
public protocol ForwardingPermit: Sendable {
    /// The lease's token while it is held and valid here, else `nil`. Cheap (a lock and a clock
    /// read): asked per request.
    var tenure: Int64? { get }
}

/// A ``ForwardingPermit`` held in a configuration value (which compares and hashes): two are
/// equal when they hold the same permit, as given, not what it answers.
public struct ForwardingPermitReference: Sendable, Hashable {
    /// The permit.
    public let permit: any ForwardingPermit
    private let id: UInt64

    /// A reference to `permit`, unlike any other made.
    public init(_ permit: any ForwardingPermit) {
        self.permit = permit
        self.id = UInt64.random(in: 0...UInt64.max)
    }

    public static func == (left: Self, right: Self) -> Bool { left.id == right.id }

    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}
