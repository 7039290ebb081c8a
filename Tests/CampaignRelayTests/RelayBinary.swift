import Foundation
import Synchronization
import Testing

/// The `campaign-relay` executable built beside the test bundle, and a way to run it.
enum RelayBinary {
    /// The path of the built `campaign-relay` executable.
    static func path() throws -> String {
        let candidates = [
            Bundle.main.executableURL?.deletingLastPathComponent(),
            Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ].compactMap { $0?.appendingPathComponent("campaign-relay").path }
        let found = candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
        return try #require(found, "campaign-relay must be built next to the tests (looked in \(candidates))")
    }

    /// What a finished run printed and returned.
    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs the executable to completion, optionally feeding `input` on standard input.
    static func run(_ binary: String, _ arguments: [String], input: Data? = nil) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        try process.run()
        if let input {
            stdin.fileHandleForWriting.write(input)
            try stdin.fileHandleForWriting.close()
        }
        // Drain both pipes concurrently so a large output never blocks the child.
        let errorData = Mutex<Data?>(nil)
        let errorHandle = err.fileHandleForReading
        let errorReader = Thread {
            let data = errorHandle.readDataToEndOfFile()
            errorData.withLock { $0 = data }
        }
        errorReader.start()
        let outputData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        var stderr: Data?
        while stderr == nil {
            stderr = errorData.withLock { $0 }
            if stderr == nil { usleep(1000) }
        }
        return Outcome(
            status: process.terminationStatus, stdout: String(decoding: outputData, as: UTF8.self),
            stderr: String(decoding: stderr ?? Data(), as: UTF8.self)
        )
    }
}
