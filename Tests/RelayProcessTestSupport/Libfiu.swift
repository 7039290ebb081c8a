import Foundation
import Testing

/// libfiu's `fiu-run`, for running the real binary with failures injected into the C library calls
/// it makes (`pwrite`, `fdatasync`, `rename`, …).
///
/// `fiu-run -x` preloads libfiu's POSIX wrappers: without `-x` no `posix/…` point exists, so every
/// run here uses it. The wrappers only see calls that go through the dynamic symbol of the function
/// they wrap. The binary imports `open`, `pwrite`, `fdatasync`, `fsync`, `rename`, `unlink`,
/// `write` (`nm -D`), SQLite `open64`, `pwrite64`, `fdatasync`, `unlink`, all wrapped; `strace -f`
/// of an ingest shows the system calls `openat` (glibc's `open` makes it), `pwrite64`, `fdatasync`,
/// `fsync`, `rename`, `ftruncate` and no `fallocate`. Since a point that is never reached proves
/// nothing, every test counts the injected errno in what the binary itself reported.
package enum Libfiu {
    package static let fiuRun = "/usr/bin/fiu-run"
    package static let fiuControl = "/usr/bin/fiu-ctrl"
    /// The errno every point injects: EIO, which a healthy tmp directory never returns, so each
    /// "Input/output error" the relay reports is one injected failure.
    package static let injectedErrno = 5
    package static let injectedReason = "Input/output error"

    /// One failure point enabled at random.
    package struct Fault: Sendable {
        package var point: String
        package var probability: Double

        package init(point: String, probability: Double) {
            self.point = point
            self.probability = probability
        }

        package var command: String { "enable_random name=\(point),probability=\(probability),failinfo=\(Libfiu.injectedErrno)" }
    }

    /// The path of `fiu-run`, or a failure saying what to install (CI's `.ci/run` installs it).
    package static func require() throws -> String {
        for tool in [fiuRun, fiuControl, "/usr/lib/fiu/fiu_posix_preload.so"] where !FileManager.default.fileExists(atPath: tool) {
            Issue.record("\(tool) is missing: these tests need libfiu's tools (apt-get install fiu-utils; .ci/run installs it)")
            throw Missing()
        }
        return fiuRun
    }

    /// The arguments of `fiu-run` that run `binary arguments` with `faults`; remote control
    /// (`fiu-ctrl`) through FIFOs under `controlPrefix` when given, none otherwise.
    package static func arguments(_ faults: [Fault], controlPrefix: String? = nil, binary: String, _ arguments: [String]) -> [String] {
        var result = ["-x", "-f", controlPrefix ?? ""]
        for fault in faults { result += ["-c", fault.command] }
        return result + [binary] + arguments
    }

    /// Turns `points` off in the running process `pid` (started with a control prefix); returns
    /// how many attempts it took.
    ///
    /// libfiu's remote-control thread answers through `open` and `write` of a FIFO, which are
    /// themselves wrapped: while those points are enabled an answer can fail and `fiu-ctrl` then
    /// waits for it forever. Disabling is idempotent, so a silent attempt is cut off after 5 s and
    /// made again, up to 4 times.
    @discardableResult
    package static func disable(_ points: [String], pid: Int32, controlPrefix: String) async throws -> Int {
        var arguments = ["-f", controlPrefix]
        for point in points { arguments += ["-c", "disable name=\(point)"] }
        var last: BoundedRun?
        for attempt in 1...4 {
            let run = try await BoundedRun.run(fiuControl, arguments + [String(pid)], seconds: 5)
            if run.ending == .exited(0) { return attempt }
            last = run
        }
        Issue.record("fiu-ctrl \(arguments) \(pid) did not succeed in 4 attempts: \(last?.ending.description ?? "") \(last?.stderr ?? "")")
        throw Missing()
    }

    /// How many failures the relay reported as `operation path: Input/output error`, by operation:
    /// the proof that faults were hit, and where.
    package static func injectedFailures(in text: String) -> [String: Int] {
        var counts: [String: Int] = [:]
        let pattern = /(pwrite|write|fdatasync|fsync|rename|unlink|open|ftruncate|opendir) [^ :"]+(?: -> [^ :"]+)?: Input\/output error/
        for match in text.matches(of: pattern) { counts[String(match.output.1), default: 0] += 1 }
        // SQLite reports the same errno as its own I/O error codes.
        let sqlite = text.matches(of: /disk I\/O error/).count
        if sqlite > 0 { counts["sqlite", default: 0] += sqlite }
        return counts
    }

    package struct Missing: Error {}
}
