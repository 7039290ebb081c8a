/// A file-system operation that failed: which one, on which path, and the system's reason.
public struct FileSystemError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The operation, e.g. `fdatasync`, `rename`, `pwrite`.
    public var operation: String
    /// The path it was applied to.
    public var path: String
    /// The `errno` value (0 when not from a system call).
    public var errno: Int32
    /// The system's description of `errno`, or another explanation.
    public var reason: String

    /// Creates an error.
    public init(operation: String, path: String, errno: Int32, reason: String) {
        self.operation = operation
        self.path = path
        self.errno = errno
        self.reason = reason
    }

    public var description: String { "\(operation) \(path): \(reason)" }
}
