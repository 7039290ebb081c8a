import Foundation
import RelayTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A small tmpfs mounted for one test: a real file system that really fills up (ENOSPC), which a
/// test can then empty again by removing the ballast it wrote. Needs root (CI runs as root).
package final class ScratchTmpfs: Sendable {
    package let path: String

    /// Mounts a tmpfs of `megabytes` on a new directory; a failure says what is missing.
    package init(megabytes: Int, label: String) async throws {
        path = temporaryDirectory(label)
        let mount = try await BoundedRun.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)M", "tmpfs", path], seconds: 20)
        guard mount.ending == .exited(0) else {
            Issue.record(
                "could not mount a tmpfs on \(path) (\(mount.ending): \(mount.stderr)): the full-disk tests need root and mount(8), as CI has")
            removeTree(path)
            throw NotMounted()
        }
    }

    /// Unmounts (lazily, should a child still hold a file) and removes the directory.
    package func unmount() async {
        _ = try? await BoundedRun.run("/usr/bin/umount", ["-l", path], seconds: 20)
        removeTree(path)
    }

    /// Bytes still free.
    package var freeBytes: Int64 {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return -1 }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Writes a file at `name` until the file system is full (ENOSPC) and returns its size: the
    /// ballast whose removal gives the space back.
    @discardableResult
    package func fill(_ name: String) throws -> Int64 {
        let descriptor = open("\(path)/\(name)", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(descriptor >= 0, "cannot create the ballast: \(String(cString: strerror(errno)))")
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0x5a, count: 4096)
        var written: Int64 = 0
        while true {
            let result = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if result > 0 {
                written += Int64(result)
            } else if result < 0, errno == EINTR {
                continue
            } else {
                try #require(result < 0 && errno == ENOSPC, "the ballast stopped short of a full disk: \(String(cString: strerror(errno)))")
                return written
            }
        }
    }

    /// Cuts the ballast `name` by `bytes`, giving that much space back.
    package func shrink(_ name: String, by bytes: Int64) throws {
        var info = stat()
        try #require(stat("\(path)/\(name)", &info) == 0, "no ballast \(name)")
        try #require(
            truncate("\(path)/\(name)", max(0, info.st_size - Int(bytes))) == 0, "cannot cut the ballast: \(String(cString: strerror(errno)))")
    }

    /// Removes the ballast `name`.
    package func remove(_ name: String) {
        unlink("\(path)/\(name)")
    }

    package struct NotMounted: Error {}
}
