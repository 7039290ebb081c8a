import ArgumentParser
import RelayLog

/// Options of commands that write the log.
struct LogOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Refuse appends (\"log full\") once the log would take more than this many bytes.", valueName: "bytes"))
    var maxWalBytes: Int64?

    @Option(name: .long, help: ArgumentHelp("Start a new segment file when one reaches this many bytes.", valueName: "bytes"))
    var segmentBytes: Int64 = 64 << 20

    @Option(name: .long, help: ArgumentHelp("zlib level of frames: 1 fastest (default) to 9 smallest, 0 uncompressed.", valueName: "level"))
    var compressionLevel: Int32 = 1

    @Flag(
        inversion: .prefixedNo,
        help: ArgumentHelp(
            "Fill the active segment with zeros 4 MiB ahead of its frames, so most fdatasyncs overwrite allocated blocks instead of growing the file (faster, steadier acknowledgements; pointless on copy-on-write file systems)."
        )
    )
    var preallocate = true

    @OptionGroup var retention: RetentionOptions

    func validate() throws {
        if let max = maxWalBytes, max <= 0 { throw ValidationError("--max-wal-bytes must be positive") }
        guard segmentBytes >= 4096 else { throw ValidationError("--segment-bytes must be at least 4096") }
        guard (0...9).contains(compressionLevel) else { throw ValidationError("--compression-level must be 0 to 9") }
    }

    /// The log's configuration the options name.
    func configuration() async throws -> LogConfiguration {
        try await retention.applied(
            to: LogConfiguration(
                segmentBytes: segmentBytes, maximumLogBytes: maxWalBytes, compressionLevel: compressionLevel, preallocateSegments: preallocate))
    }
}
