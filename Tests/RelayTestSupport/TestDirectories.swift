public import Logging
import RelayLog

#if canImport(Glibc)
    import Glibc
#endif

/// A logger that drops everything (tests assert on behaviour, not on log lines).
public let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

/// A new, unique scratch directory on the real file system (remove it with ``removeTree(_:)``).
public func temporaryDirectory(_ label: String) -> String {
    let path = "/tmp/campaign-relay-tests/\(label)-\(UInt64.random(in: 0...UInt64.max))"
    try? PosixFileSystem().createDirectory(path)
    return path
}

/// Removes a directory tree.
public func removeTree(_ path: String) {
    let fileSystem = PosixFileSystem()
    for name in (try? fileSystem.listDirectory(path)) ?? [] {
        let child = "\(path)/\(name)"
        if (try? fileSystem.listDirectory(child)) != nil { removeTree(child) } else { try? fileSystem.remove(child) }
    }
    rmdir(path)
}
