public import CampaignEmulator
import Logging

/// A Campaign host emulator serving real HTTP on a free loopback port, inside the test process.
public final class RunningEmulator: Sendable {
    /// The emulator (faults can be changed while it runs).
    public let emulator: CampaignEmulator
    /// The port it listens on.
    public let port: Int
    private let task: Task<Void, any Error>

    /// `http://127.0.0.1:<port>`.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// Starts an emulator with `faults` and waits until it listens.
    public static func start(faults: EmulatorFaults = EmulatorFaults()) async throws -> RunningEmulator {
        let emulator = CampaignEmulator(faults: faults)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task {
            try await emulator.run(host: "127.0.0.1", port: 0, logger: Logger(label: "emulator", factory: { _ in SwiftLogNoOpLogHandler() })) {
                port in
                continuation.yield(port)
                continuation.finish()
            }
        }
        var bound: Int?
        for await port in ports { bound = port }
        guard let port = bound else { throw EmulatorDidNotStart() }
        return RunningEmulator(emulator: emulator, port: port, task: task)
    }

    private init(emulator: CampaignEmulator, port: Int, task: Task<Void, any Error>) {
        self.emulator = emulator
        self.port = port
        self.task = task
    }

    /// Stops the server.
    public func stop() async {
        task.cancel()
        _ = try? await task.value
    }

    struct EmulatorDidNotStart: Error {}
}
