// swift-tools-version:6.1
import PackageDescription

// The benchmarks live in their own package (as swift-nio's do) so that `swift build` and
// `swift test` of campaign-relay never compile them.
let swiftSettings: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "campaign-relay-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "campaign-relay", path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // What several benchmarks share: generated events, the SQLite baseline queue.
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                .product(name: "RelayCore", package: "campaign-relay"),
                .product(name: "RelayLog", package: "campaign-relay"),
                .product(name: "RelaySQLite", package: "campaign-relay"),
            ],
            swiftSettings: swiftSettings
        ),
        // `swift package benchmark`: the write-ahead log against SQLite, batch by batch.
        .executableTarget(
            name: "WALBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "RelayCore", package: "campaign-relay"),
                .product(name: "RelayLog", package: "campaign-relay"),
                .product(name: "RelayAggregator", package: "campaign-relay"),
            ],
            path: "Benchmarks/WALBenchmarks",
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // `ingest-baseline-sqlite`: what `campaign-relay ingest` does, with SQLite instead of the log.
        .executableTarget(
            name: "IngestBaseline",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "RelayCore", package: "campaign-relay"),
            ],
            swiftSettings: swiftSettings
        ),
        // `AckLatency`: ack latency at half load (open loop), the log against SQLite.
        .executableTarget(
            name: "AckLatency",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "RelayCore", package: "campaign-relay"),
                .product(name: "RelayLog", package: "campaign-relay"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
