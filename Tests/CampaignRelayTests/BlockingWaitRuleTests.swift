import Foundation
import RelayIO
import RelayTestSupport
import TestTiers
import Testing

/// The project's rule for blocking I/O, held in the tests too: a wait that holds its thread runs on
/// a thread of its own, never on the cooperative pool, whose two threads (on two cores) every
/// in-process server of every suite needs. Checked twice: here in the source, and where the waits
/// happen (``CooperativePool/refuseBlocking(_:fileID:filePath:line:column:)`` in every blocking helper).
@Suite("Blocking waits in the tests", .tier(.fast))
struct BlockingWaitRuleTests {
    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    /// Calls that hold their thread until something happens.
    static var blockingCall: Regex<(Substring, Substring?, Substring?, Substring?, Substring?)> {
        #/(^|[^\w.])(usleep|nanosleep|sleep|waitpid|read|recv|accept|poll)\(|Thread\.sleep|\.waitUntilExit\(\)|waitForExit\(|(^|[^\w])(readPipe|readChunk|runBlocking)\(|syncShutdown\(|\.wait\(\)|readDataToEndOfFile/#
    }

    /// The blocks whose body runs on a thread of its own: a `Thread`, `onThreadOfItsOwn`, or an
    /// executor's `run` (``BlockingExecutor``, ``DedicatedThreadExecutor``).
    static var ownThreadOpener: Regex<Substring> { #/Thread \{|Thread\(block:|onThreadOfItsOwn \{|\.run \{/# }

    /// Functions that block by design, and why that is safe: each one either runs only on a thread
    /// of its own, or refuses the pool at run time.
    static let blockingFunctions: [String: String] = [
        "RelayTestSupport/SpawnedProcess.swift waitUntilExit": "refuses the pool at run time; tasks await exited()",
        "RelayProcessTestSupport/ChildProcess.swift waitForExit": "refuses the pool at run time; tasks await exit(within:) or stop()",
        "RelayProcessTestSupport/BoundedRun.swift runBlocking": "refuses the pool at run time; run(_:_:seconds:) calls it on a Thread",
        "RelayProcessTestSupport/PipeReading.swift readPipe": "refuses the pool at run time; called on the pipe readers' threads",
        "RelayProcessTestSupport/PipeReading.swift readChunk": "refuses the pool at run time; called on the pipe readers' threads",
        "RelayTestSupport/DedicatedThreadExecutor.swift init": "waits microseconds for its own thread to start, before any test task uses it",
        "RelayTestSupport/SimulatedFileSystem.swift synchronize":
            "the simulated fdatasync held by a test's gate: called through the FileSystem layer, on the log's own executor",
        "RelayTestSupport/TestPostgres.swift run": "runs on the test-postgres BlockingExecutor",
    ]

    /// A blocking call found in the source, with the blocks around it.
    struct Finding {
        var file: String
        var line: Int
        var text: String
        var function: String?
        var onThreadOfItsOwn: Bool
    }

    /// Every blocking call under `Tests/` (comments left out), with its enclosing function and
    /// whether a block around it runs on a thread of its own. swift-format's indentation gives the
    /// nesting: the enclosing blocks are the lines above with less indentation.
    static func findings() throws -> [Finding] {
        guard let walker = FileManager.default.enumerator(at: testsDirectory, includingPropertiesForKeys: nil) else { return [] }
        let function = try Regex(#"func ([A-Za-z0-9_]+)|(^|\s)(init)[(<]|(deinit) \{"#)
        var found: [Finding] = []
        for case let url as URL in walker where url.pathExtension == "swift" && url.lastPathComponent != "BlockingWaitRuleTests.swift" {
            let file = String(url.path.dropFirst(testsDirectory.path.count + 1))
            let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for (index, line) in lines.enumerated() {
                // Words every blocking call holds: a cheap test before the regular expressions.
                guard ["sleep", "wait", "read", "recv", "accept", "poll", "runBlocking", "syncShutdown"].contains(where: line.contains) else {
                    continue
                }
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
                // A declaration of a blocking function is not a call, an awaited function of the
                // same name is not the system call, and a call told not to wait does not wait.
                let calls = code.replacing(#/"([^"\\]|\\.)*"/#, with: "\"\"").replacing(#/await \w+\(/#, with: "await (")
                guard calls.contains(blockingCall), !code.contains("func "), !["WNOHANG", "MSG_DONTWAIT"].contains(where: code.contains) else {
                    continue
                }
                var indentation = line.prefix { $0 == " " }.count
                var finding = Finding(
                    file: file, line: index + 1, text: line.trimmingCharacters(in: .whitespaces), function: nil, onThreadOfItsOwn: false)
                // The line itself may open the block it blocks in: `Thread { usleep(…) }`.
                if code.contains(ownThreadOpener) { finding.onThreadOfItsOwn = true }
                for above in lines[..<index].reversed() where !above.trimmingCharacters(in: .whitespaces).isEmpty {
                    let depth = above.prefix { $0 == " " }.count
                    // The `) … {`, `-> T` or `{` that ends a signature written over several lines is
                    // not the block's opener: its `func` line is.
                    let trimmed = above.trimmingCharacters(in: .whitespaces)
                    guard depth < indentation, !trimmed.hasPrefix(")"), !trimmed.hasPrefix("{"), !trimmed.hasPrefix("->") else { continue }
                    indentation = depth
                    if above.contains(ownThreadOpener) { finding.onThreadOfItsOwn = true }
                    if finding.function == nil, let match = above.firstMatch(of: function) {
                        finding.function = [match.output[1], match.output[3], match.output[4]].compactMap { $0?.substring }.first.map(String.init)
                    }
                    if depth == 0 { break }
                }
                found.append(finding)
            }
        }
        return found
    }

    @Test("a blocking call in a test runs in a block on a thread of its own, or in a function listed with the reason it is safe")
    func blockingCallsStayOffThePool() throws {
        let findings = try Self.findings()
        #expect(findings.count > 10, "the walk should find the blocking helpers")
        var used = Set<String>()
        for finding in findings where !finding.onThreadOfItsOwn {
            let key = "\(finding.file) \(finding.function ?? "?")"
            if Self.blockingFunctions[key] != nil {
                used.insert(key)
            } else {
                Issue.record(
                    "Tests/\(finding.file):\(finding.line) blocks a thread in \(finding.function ?? "top-level code"): \(finding.text); await the async form (exited(), stop(), RelayBinary.run, Task.sleep) or run it in onThreadOfItsOwn { }"
                )
            }
        }
        for key in Set(Self.blockingFunctions.keys).subtracting(used).sorted() {
            Issue.record("\(key) no longer blocks: take it off blockingFunctions")
        }
    }

    @Test("the run-time check tells the cooperative pool from threads of their own")
    func poolIsRecognized() async throws {
        #expect(CooperativePool.canTell, "dispatch_queue_get_label was not found: the run-time check would never fire")
        #expect(CooperativePool.isCurrentThread, "a test's task runs on the cooperative pool")
        let onThread = try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(returning: CooperativePool.isCurrentThread) }.start()
        }
        #expect(!onThread)
        #expect(await BlockingExecutor(name: "pool-check").run { CooperativePool.isCurrentThread } == false)
        #expect(try await DedicatedThreadExecutor(name: "pool-check").run { CooperativePool.isCurrentThread } == false)
        #expect(await Task.detached { CooperativePool.isCurrentThread }.value)
    }

    @Test("a blocking wait on the pool is recorded as an issue of the test that made it")
    func blockingOnThePoolIsRecorded() async throws {
        let process = try SpawnedProcess("/bin/true", [])
        withKnownIssue("waitUntilExit() on the cooperative pool") {
            process.waitUntilExit()
        }
        await process.exited()
        #expect(process.terminationStatus == 0)
    }
}
