public import CampaignProtocol
public import NIOCore

/// The bytes of a tracking hit's request to one host, written straight into a buffer:
/// `GET {prefix}{path and query} HTTP/1.1`, `Host` and `User-Agent`, no body.
///
/// Everything but the path and query is the same for every hit to a host, so it is made once.
/// This is what NIO's HTTP encoder wrote for the same `HTTPRequestHead`, without building that
/// head, its header list and its validation per hit (a drain sends millions).
public struct HitRequestBytes: Sendable {
    /// `GET ` and the host's path prefix.
    public let start: String
    /// The rest of the request line, the header fields and the empty line ending them.
    public let end: String
    /// Whether the host's path prefix can go in a request line (see ``isValidTarget(_:)``).
    private let prefixIsValid: Bool

    /// The request bytes for hits to `host`.
    public init(host: CampaignHost) {
        start = "GET " + host.pathPrefix
        prefixIsValid = Self.isVisibleASCII(host.pathPrefix)
        let hostField = host.port.map { "\(host.host):\($0)" } ?? host.host
        end = " HTTP/1.1\r\nHost: \(hostField)\r\nUser-Agent: campaign-relay\r\n\r\n"
    }

    /// The whole request for `pathAndQuery` (a ``CampaignRequest/pathAndQuery``), in a buffer
    /// from `allocator`.
    public func request(for pathAndQuery: String, allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: start.utf8.count + pathAndQuery.utf8.count + end.utf8.count)
        buffer.writeString(start)
        buffer.writeString(pathAndQuery)
        buffer.writeString(end)
        return buffer
    }

    /// Whether the host's prefix and `pathAndQuery` can go in a request line as they are:
    /// `pathAndQuery` not empty, and both only visible ASCII characters (no space, control
    /// character or byte above 0x7E), so a request line can neither be split nor gain a header.
    /// Hits from the log always can (their ids are validated when they are taken in); this guards
    /// the bytes the pipeline writes without an encoder.
    public func isValidTarget(_ pathAndQuery: String) -> Bool {
        prefixIsValid && !pathAndQuery.isEmpty && Self.isVisibleASCII(pathAndQuery)
    }

    private static func isVisibleASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}
