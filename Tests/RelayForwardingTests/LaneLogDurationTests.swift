import CampaignEmulator
import CampaignProtocol
import Logging
import NIOConcurrencyHelpers
import RelayCore
import RelayForwarding
import RelayLog
import RelayTestSupport
import TestTiers
import Testing

/// The durations a lane logs while its host is down and when it answers again are written for
/// people (`Duration.humanText`: `512ms`, `1.66s`), as `was-down-for=1.660393325 seconds` was not.
@Suite("Upload lanes log durations for people", .timeLimit(.minutes(5)), .tier(.fast))
struct LaneLogDurationTests {
    /// `0.412ms`, `250ms`, `1.66s`, `2m5s`, `1h30m`, `3d4h`: the notation of `Duration.humanText`.
    static func isHumanDuration(_ text: String) -> Bool {
        text.wholeMatch(of: /\d+(\.\d{1,3})?(ms|s)|\d+[mhd](\d+[smh])?/) != nil
    }

    @Test("a host answering 503 until the lane pauses, then 200: next-try-in, down-since, was-down-for and any retry's delay are human durations")
    func outageDurations() async throws {
        var faults = EmulatorFaults()
        faults.failureRate = 1
        faults.failureStatus = 503
        let running = try await RunningEmulator.start(faults: faults)
        let directory = temporaryDirectory("lane-log")
        defer { removeTree(directory) }
        let log = try await WriteAheadLog.open(
            dataDirectory: directory, consumers: [UploadLane.Kind.tracking.consumer, UploadLane.Kind.marketing.consumer], logger: quietLogger)
        _ = try await log.append((1...50).map { hit($0) })
        let store = try await ForwardingStore(dataDirectory: directory)
        let host = try CampaignHost(parsing: running.url, role: "test")
        // The host comes back once the lane has paused sends to it: the event the test waits for,
        // heard as it is logged, whatever the time it took.
        let emulator = running.emulator
        let captured = CapturedLogRecords { message in
            if message.hasSuffix("is failing; pausing sends to it") { emulator.currentFaults = EmulatorFaults() }
        }
        let uploader = try Uploader(
            log: log, sinks: [SinkList(tenant: nil, sinks: [TrackingHostSink(host: host), MarketingHostSink(host: host)])], store: store,
            configuration: UploadConfiguration(backoff: Backoff(base: .milliseconds(5), cap: .milliseconds(50))),
            logger: Logger(label: "lane", factory: { _ in captured }))
        try await uploader.run(until: await log.durableSequence)
        await log.close()
        await running.stop()
        #expect(await running.emulator.recorder.acceptedHits == 50)

        let records = captured.records
        // The pipeline of hits pauses the lane (next-try-in, down-since) and logs its recovery.
        let paused = try #require(records.first { $0.message.hasSuffix("is failing; pausing sends to it") }, "\(records.map(\.message))")
        let nextTry = try #require(paused.metadata["next-try-in"])
        #expect(Self.isHumanDuration(nextTry), "next-try-in=\(nextTry)")
        let recovered = try #require(records.first { $0.message.hasSuffix("answers again") }, "\(records.map(\.message))")
        let downFor = try #require(recovered.metadata["was-down-for"])
        #expect(Self.isHumanDuration(downFor), "was-down-for=\(downFor)")
        for record in records {
            // One event retried alone says how long it waits in its message.
            if let delay = record.message.split(separator: "; retrying in ").dropFirst().first {
                #expect(Self.isHumanDuration(String(delay)), "\(record.message)")
            }
            for key in ["next-try-in", "was-down-for", "took"] {
                if let value = record.metadata[key] { #expect(Self.isHumanDuration(value), "\(record.message): \(key)=\(value)") }
            }
            if let value = record.metadata["down-since"] { #expect(value == "now" || Self.isHumanDuration(String(value.dropLast(4)))) }
            #expect(!record.metadata.values.contains { $0.contains(" seconds") }, "\(record.message): \(record.metadata)")
        }
    }
}
