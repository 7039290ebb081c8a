// swift-tools-version:6.1
import PackageDescription

// Every dependency is pinned exactly: Package.resolved is not committed (the package mirror this
// project builds from gives its own commit ids), so the versions here are what a clone resolves.
//
// The benchmarks (Benchmarks/) are targets of this package too, so they compile against the same
// build of the relay's modules; they are added only when CAMPAIGN_RELAY_BENCHMARKS is set, so a
// plain `swift build` or `swift test` never compiles them or resolves their harness.
let benchmarks = Context.environment["CAMPAIGN_RELAY_BENCHMARKS"] != nil
// The libFuzzer driver (Fuzz/Driver) has no `main` of its own: libFuzzer gives it one. It is added
// only when CAMPAIGN_RELAY_FUZZ is set, by Fuzz/fuzz.sh, which builds with -sanitize=fuzzer.
let fuzzing = Context.environment["CAMPAIGN_RELAY_FUZZ"] != nil

/// One list of settings for every target: Swift 6 language mode with strict concurrency everywhere.
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "campaign-relay",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "campaign-relay", targets: ["CampaignRelay"]),
        .library(name: "RelayIO", targets: ["RelayIO"]),
        .library(name: "RelayCore", targets: ["RelayCore"]),
        .library(name: "CampaignProtocol", targets: ["CampaignProtocol"]),
        .library(name: "RelayEventJSON", targets: ["RelayEventJSON"]),
        .library(name: "RelayLog", targets: ["RelayLog"]),
        .library(name: "RelaySQLite", targets: ["RelaySQLite"]),
        .library(name: "RelayAggregates", targets: ["RelayAggregates"]),
        .library(name: "RelayAggregator", targets: ["RelayAggregator"]),
        .library(name: "RelayForwarding", targets: ["RelayForwarding"]),
        .library(name: "CampaignEmulator", targets: ["CampaignEmulator"]),
        .library(name: "RelayTLS", targets: ["RelayTLS"]),
        .library(name: "RelayChain", targets: ["RelayChain"]),
        .library(name: "RelayPostgres", targets: ["RelayPostgres"]),
        .library(name: "RelayPrivacy", targets: ["RelayPrivacy"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        // Hummingbird's traits named, not its defaults: with two traits SwiftPM passes their defines in
        // an order that changes from one plan to the next, and every new plan (CAMPAIGN_RELAY_BENCHMARKS
        // switched on or off) then recompiled Hummingbird and all that imports it. The relay does not
        // use its swift-configuration support (ConfigurationSupport).
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", exact: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", exact: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        // The metrics API the lanes record through (swift-prometheus depends on it; this is the
        // version its graph resolves).
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/LebJe/TOMLKit", exact: "0.6.0"),
        // Keyed hashes that stand for personal data in what the relay shows (already in the graph
        // through postgres-nio).
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
    ],
    targets: [
        // System libraries: the C APIs of zlib and SQLite, with shims for the macros Swift cannot import.
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),

        // The I/O boundary: threads of their own for blocking calls, as actor executors or for closures.
        .target(
            name: "RelayIO",
            dependencies: [.product(name: "NIOConcurrencyHelpers", package: "swift-nio")],
            swiftSettings: swiftSettings
        ),
        // The event model: events, message ids, times, validation, and a JSON parser.
        .target(
            name: "RelayCore",
            swiftSettings: swiftSettings
        ),
        // The SDK registration form as Campaign reads it (form encoding, `additionalParams` XML): a
        // part of the wire protocol, a module of its own so that the log, which stores the forms
        // the SDKs posted and reads them back, does not depend on the rest of it.
        .target(
            name: "CampaignSDKForm",
            dependencies: ["RelayCore"],
            swiftSettings: swiftSettings
        ),
        // The Campaign wire protocol: SDK requests read as Campaign reads them, Campaign requests
        // written as the SDKs write them, the message-id and tracking-hit rules, the endpoints.
        .target(
            name: "CampaignProtocol",
            dependencies: ["RelayCore", "CampaignSDKForm"],
            swiftSettings: swiftSettings
        ),
        // The relay's own JSON event format: JSON lines and batches in, JSON out.
        .target(
            name: "RelayEventJSON",
            dependencies: ["RelayCore", "CampaignProtocol", "CampaignSDKForm"],
            swiftSettings: swiftSettings
        ),
        // The write-ahead log: frames, segments, group commit, recovery, readers, and the consumer
        // layer (consumers declared at open, their cursors, the catch-up loop).
        .target(
            name: "RelayLog",
            dependencies: [
                "RelayCore",
                "CampaignSDKForm",
                "RelayIO",
                "CZlib",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // A thin layer over SQLite's C API for the aggregator and the benchmark baseline.
        .target(
            name: "RelaySQLite",
            dependencies: ["CSQLite", "RelayIO"],
            swiftSettings: swiftSettings
        ),
        // The aggregate model both backends share: the one table of metrics, the count reduction
        // (`CountDeltas`), the counts it reads back, and the aggregate-backend protocol.
        .target(
            name: "RelayAggregates",
            dependencies: ["RelayCore"],
            swiftSettings: swiftSettings
        ),
        // Exact counts per delivery and per app, kept in SQLite from the log, exactly once.
        .target(
            name: "RelayAggregator",
            dependencies: [
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                "RelayAggregates",
                "RelayCore",
                "RelayIO",
                "RelayLog",
                "RelaySQLite",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Fleet mode: this relay's counts in a shared PostgreSQL, exactly once, beside other relays'.
        .target(
            name: "RelayPostgres",
            dependencies: [
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                "RelayCore",
                "RelayIO",
                "RelayLog",
                "RelayAggregates",
                "RelayForwarding",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Forwarding to the Campaign hosts: byte-exact requests, the retrying uploader, dead letters.
        .target(
            name: "RelayForwarding",
            dependencies: [
                "RelayCore",
                "RelayChain",
                "CampaignProtocol", "CampaignSDKForm",
                "RelayEventJSON",
                "RelayIO",
                "RelayLog",
                "RelaySQLite",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // Relay chains: what a central relay knows of the relays that hand it events.
        .target(
            name: "RelayChain",
            dependencies: ["RelayCore", "RelayLog"],
            swiftSettings: swiftSettings
        ),
        // TLS on the HTTP listeners: PEM files, client certificates, reload on SIGHUP.
        .target(
            name: "RelayTLS",
            dependencies: [
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // An emulator of the Campaign marketing and tracking hosts, with fault injection.
        .target(
            name: "CampaignEmulator",
            dependencies: [
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                "RelayCore",
                "CampaignProtocol", "CampaignSDKForm",
                "RelayTLS",
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            swiftSettings: swiftSettings
        ),
        // Erasure of a person's data (docs/privacy.md), the same for `serve`'s API and the `erase`
        // command: the log and its archives rewritten, counts uncounted, dead letters and sends dropped.
        .target(
            name: "RelayPrivacy",
            dependencies: [
                "RelayCore",
                "RelayIO",
                "RelayLog",
                "RelayAggregates",
                "RelayAggregator",
                "RelayForwarding",
                "RelayPostgres",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The sidecar server: SDK-compatible and JSON ingest with durable acks, admin API, metrics.
        .target(
            name: "RelayServer",
            dependencies: [
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                "RelayCore",
                "RelayChain",
                "CampaignProtocol", "CampaignSDKForm",
                "RelayEventJSON",
                "RelayIO",
                "RelayLog",
                "RelayAggregates",
                "RelayAggregator",
                "RelayForwarding",
                "RelayPostgres",
                "RelayPrivacy",
                "RelaySQLite",
                "RelayTLS",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The `campaign-relay` command-line tool.
        .executableTarget(
            name: "CampaignRelay",
            dependencies: [
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                "RelayCore",
                "RelayIO",
                "CampaignProtocol", "CampaignSDKForm",
                "RelayEventJSON",
                "RelayLog",
                "RelayAggregates",
                "RelayAggregator",
                "RelayForwarding",
                "RelayPostgres",
                "RelayPrivacy",
                "CampaignEmulator",
                "RelayServer",
                "RelayTLS",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            swiftSettings: swiftSettings
        ),

        // The fuzz targets: what must hold of each parser of untrusted bytes. Built always, so the
        // tests replay the committed corpora (Fuzz/Corpus) through them.
        .target(
            name: "RelayFuzzTargets",
            dependencies: [
                "RelayCore", "CampaignProtocol", "CampaignSDKForm", "RelayEventJSON", "RelayLog", "RelayChain",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Fuzz/Targets",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FuzzCorpusTests",
            dependencies: ["TestTiers", "RelayFuzzTargets"],
            swiftSettings: swiftSettings
        ),

        // The two test tiers (fast: `swift test`; thorough: Tests/thorough.sh) and the trait that
        // puts each suite in one of them. Every test target depends on it.
        .target(
            name: "TestTiers",
            path: "Tests/TestTiers",
            swiftSettings: swiftSettings
        ),
        // Test helpers shared by several test targets: a simulated crash-prone file system.
        .target(
            name: "RelayTestSupport",
            dependencies: [
                "RelayCore", "RelayLog", "RelayIO", "CampaignEmulator", .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/RelayTestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RelayCoreTests",
            dependencies: ["TestTiers", "RelayCore", "CampaignProtocol", "CampaignSDKForm"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RelayEventJSONTests",
            dependencies: ["TestTiers", "RelayEventJSON", "RelayCore", "CampaignProtocol", "CampaignSDKForm", "RelayTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RelayIOTests",
            dependencies: ["TestTiers", "RelayIO", .product(name: "NIOConcurrencyHelpers", package: "swift-nio")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RelayChainTests",
            dependencies: ["TestTiers", "RelayChain", "RelayCore", "RelayLog"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CampaignProtocolTests",
            dependencies: [
                "TestTiers",
                "CampaignProtocol", "CampaignSDKForm", "RelayCore", "RelayForwarding", "CampaignEmulator", "RelayTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RelayLogTests",
            dependencies: [
                "TestTiers",
                "RelayLog", "RelayIO", "RelayCore", "CampaignProtocol", "CampaignSDKForm", "RelayEventJSON", "RelayTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RelayAggregatorTests",
            dependencies: [
                "TestTiers",
                "RelayAggregates", "RelayAggregator", "RelayLog", "RelayCore", "RelaySQLite", "RelayTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RelayForwardingTests",
            dependencies: [
                "TestTiers",
                "RelayForwarding", "CampaignEmulator", "CampaignProtocol", "CampaignSDKForm", "RelayLog", "RelayCore", "RelayTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // What the process-level suites share: running the real binary with a deadline, child
        // processes, libfiu, network namespaces, a scratch tmpfs, load generators, an in-process
        // server and an HTTP client.
        .target(
            name: "RelayProcessTestSupport",
            dependencies: [
                "RelayLog", "RelayForwarding", "RelayServer", "RelayTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/RelayProcessTestSupport",
            exclude: ["Scripts"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RelayServerTests",
            dependencies: [
                "TestTiers",
                "RelayServer", "RelayPrivacy", "RelayLog", "RelayCore", "CampaignProtocol", "CampaignSDKForm", "RelayEventJSON", "RelayIO",
                "RelaySQLite", "RelayChain",
                "RelayForwarding",
                "RelayAggregates", "RelayAggregator", "RelayPostgres", "CampaignEmulator", "RelayTestSupport", "RelayProcessTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The process-level suites: the real binary, kill -9, libfiu, full disks, network
        // namespaces, PostgreSQL, TLS, Chromium. (RelayPostgres too: the fleet schema's migrations
        // and per-tenant queries are driven in-process against a throw-away PostgreSQL.)
        .testTarget(
            name: "CampaignRelayTests",
            dependencies: [
                "TestTiers",
                "RelayLog", "RelayCore", "CampaignProtocol", "CampaignSDKForm", "RelayEventJSON", "RelayIO", "RelaySQLite", "RelayChain",
                "RelayAggregates",
                "RelayAggregator", "RelayPostgres", "RelayForwarding", "CampaignEmulator", "RelayTestSupport", "RelayProcessTestSupport",
                "CampaignRelay",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            exclude: ["Scripts"],
            swiftSettings: swiftSettings
        ),
    ]
)

if fuzzing {
    package.targets.append(
        .executableTarget(
            name: "RelayFuzzer",
            dependencies: ["RelayFuzzTargets"],
            path: "Fuzz/Driver",
            swiftSettings: swiftSettings
        )
    )
}

if benchmarks {
    // As the benchmarks were written: Swift 6 mode, imports public by default.
    let benchmarkSwiftSettings: [SwiftSetting] = [.swiftLanguageMode(.v6)]
    package.dependencies.append(.package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]))
    package.targets += [
        // What several benchmarks share: generated events, the SQLite baseline queue.
        .target(
            name: "BenchmarkSupport",
            dependencies: ["RelayCore", "CampaignProtocol", "CampaignSDKForm", "RelayEventJSON", "RelayIO", "RelayLog", "RelaySQLite"],
            path: "Benchmarks/Sources/BenchmarkSupport",
            swiftSettings: benchmarkSwiftSettings
        ),
        // `swift package benchmark`: the write-ahead log against SQLite, batch by batch.
        .executableTarget(
            name: "WALBenchmarks",
            dependencies: ["BenchmarkSupport", "RelayCore", "RelayLog", "RelayAggregator", .product(name: "Benchmark", package: "benchmark")],
            path: "Benchmarks/Benchmarks/WALBenchmarks",
            swiftSettings: benchmarkSwiftSettings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // `ingest-baseline-sqlite`: what `campaign-relay ingest` does, with SQLite instead of the log.
        .executableTarget(
            name: "IngestBaseline",
            dependencies: ["BenchmarkSupport", "RelayCore", "RelayEventJSON"],
            path: "Benchmarks/Sources/IngestBaseline",
            swiftSettings: benchmarkSwiftSettings
        ),
        // `AckLatency`: ack latency at half load (open loop), the log against SQLite.
        .executableTarget(
            name: "AckLatency",
            dependencies: [
                "BenchmarkSupport", "RelayCore", "RelayLog",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/Sources/AckLatency",
            swiftSettings: benchmarkSwiftSettings
        ),
    ]
}
