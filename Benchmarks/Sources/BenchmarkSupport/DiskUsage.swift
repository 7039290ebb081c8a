#if canImport(Glibc)
    import Glibc
#endif

/// Bytes that files take, for bytes-per-event figures.
public enum DiskUsage {
    /// The size of a file, or 0 when it does not exist.
    public static func fileBytes(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// The total size of the regular files directly in `directory` whose names end with `suffix`.
    public static func directoryBytes(_ directory: String, suffix: String) -> Int64 {
        guard let handle = opendir(directory) else { return 0 }
        defer { closedir(handle) }
        var total: Int64 = 0
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name.hasSuffix(suffix) { total += fileBytes("\(directory)/\(name)") }
        }
        return total
    }
}
