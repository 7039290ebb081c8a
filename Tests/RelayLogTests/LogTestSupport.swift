import RelayCore
@testable import RelayLog
import RelayTestSupport
import Logging

/// A logger that drops everything (tests assert on behaviour, not on log lines).
let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

/// Reads every event of the log in `dataDirectory` from `position` on.
func readAll(_ dataDirectory: String, fileSystem: any FileSystem, from position: UInt64 = 1) throws -> (events: [SequencedEvent], damage: [LogDamage]) {
    var reader = LogReader(walDirectory: LogLayout(dataDirectory: dataDirectory).walDirectory, fileSystem: fileSystem, from: position)
    var events: [SequencedEvent] = []
    var damage: [LogDamage] = []
    while true {
        let batch = try reader.read(maximumEvents: 10_000)
        damage += batch.damage
        if batch.events.isEmpty { break }
        events += batch.events
    }
    return (events, damage)
}

/// A unique scratch directory on the real file system, removed by the caller.
func temporaryDirectory(_ label: String) -> String {
    let path = "/tmp/campaign-relay-tests/\(label)-\(UInt64.random(in: 0...UInt64.max))"
    try? PosixFileSystem().createDirectory(path)
    return path
}

/// Removes a directory tree made by ``temporaryDirectory(_:)``.
func removeTree(_ path: String) {
    let fs = PosixFileSystem()
    guard let names = try? fs.listDirectory(path) else {
        try? fs.remove(path)
        return
    }
    for name in names {
        let child = "\(path)/\(name)"
        if (try? fs.listDirectory(child)) != nil { removeTree(child) } else { try? fs.remove(child) }
    }
    _ = path.withCString { rmdir($0) }
}

#if canImport(Glibc)
import Glibc
#endif
