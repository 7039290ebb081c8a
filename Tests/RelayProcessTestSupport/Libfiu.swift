import Foundation
import Synchronization
import Testing

/// libfiu, for running the real binary with failures injected into the C library calls it makes
/// (`pwrite`, `fdatasync`, `rename`, …), and beside it a preload of this project's that fails
/// `open` for the data directory alone (`Scripts/open_faults.c`, see ``dataDirectoryOpenPoint``).
///
/// A run is what `fiu-run -x` does, spelled out with `/usr/bin/env` so that two more things can
/// go into it: `FIU_PRNG_SEED` (libfiu's own draws repeat with the test's seed, as far as the
/// order of the relay's threads lets them) and the `open` preload in `LD_PRELOAD` (which
/// `fiu-run` sets to its two libraries alone). Like `fiu-run -x`, it preloads libfiu's POSIX
/// wrappers: without them no `posix/…` point exists. The wrappers only see calls that go through
/// the dynamic symbol of the function they wrap. The binary imports `open`, `pwrite`, `fdatasync`,
/// `fsync`, `rename`, `unlink`, `write` (`nm -D`), SQLite `open64`, `pwrite64`, `fdatasync`,
/// `unlink`, all wrapped; `strace -f` of an ingest shows the system calls `openat` (glibc's `open`
/// makes it), `pwrite64`, `fdatasync`, `fsync`, `rename`, `ftruncate` and no `fallocate`. Since a
/// point that is never reached proves nothing, every test counts the injected errno in what the
/// binary itself reported, per kind of call.
package enum Libfiu {
    /// What starts a run: `env`, with libfiu's variables and preloads (see the type's comment).
    package static let launcher = "/usr/bin/env"
    package static let fiuControl = "/usr/bin/fiu-ctrl"
    package static let runPreload = "/usr/lib/fiu/fiu_run_preload.so"
    package static let posixPreload = "/usr/lib/fiu/fiu_posix_preload.so"
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

    /// libfiu's `posix/io/oc/open` fails every `open` of the process, and libdispatch, under
    /// Swift's executors, reads `/proc/self/task/*/stat` with `open` while it watches its thread
    /// pool, and traps (SIGILL in `_dispatch_workq_monitor_pools`) when that fails: no run could
    /// tell the relay's crashes from libdispatch's. This point, of the preload
    /// `Scripts/open_faults.c` (``openFaultLibrary()``), fails `open`, `open64`, `openat` and
    /// `openat64` with EIO only for paths under the directory ``arguments(_:controlPrefix:seed:openFaultsUnder:binary:_:)``
    /// names (the relay's data directory). It is a libfiu point like the others: enabled with a
    /// probability (at the start, or later with ``enable(_:pid:controlPrefix:)``), drawn from
    /// `FIU_PRNG_SEED`, disabled with `fiu-ctrl`.
    package static let dataDirectoryOpenPoint = "campaign-relay/data-dir/open"

    /// Fails the test, saying what to install, when libfiu's tools are missing (CI's `.ci/run`
    /// installs them); returns ``launcher``, the executable of every run.
    package static func require() throws -> String {
        for tool in [fiuControl, runPreload, posixPreload] where !FileManager.default.fileExists(atPath: tool) {
            Issue.record("\(tool) is missing: these tests need libfiu's tools (apt-get install fiu-utils; .ci/run installs it)")
            throw Missing()
        }
        return launcher
    }

    /// The arguments of ``launcher`` that run `binary arguments` with `faults`, libfiu's draws
    /// seeded with `seed`; remote control (`fiu-ctrl`) through FIFOs under `controlPrefix` when
    /// given, none otherwise. With `openFaultsUnder` (the data directory, and the library
    /// ``openFaultLibrary()`` built), the point ``dataDirectoryOpenPoint`` among `faults` fails
    /// opens of the paths under it.
    package static func arguments(
        _ faults: [Fault], controlPrefix: String? = nil, seed: UInt64, openFaultsUnder: (directory: String, library: String)? = nil,
        binary: String, _ arguments: [String]
    ) -> [String] {
        // As fiu-run writes it: one command per line. libfiu reads its seed with atoi: 31 bits.
        let enable = faults.map { "\n" + $0.command }.joined()
        var preloads = [runPreload, posixPreload]
        var variables = [
            "FIU_ENABLE=\(enable)", "FIU_CTRL_FIFO=\(controlPrefix ?? "")", "FIU_PRNG_SEED=\(UInt32(truncatingIfNeeded: seed) & 0x7fff_ffff)",
        ]
        if let (directory, library) = openFaultsUnder {
            preloads.append(library)
            variables.append("CAMPAIGN_RELAY_OPEN_FAULT_PREFIX=\(directory.hasSuffix("/") ? directory : directory + "/")")
        }
        return variables + ["LD_PRELOAD=\(preloads.joined(separator: " "))", binary] + arguments
    }

    /// The preload of ``dataDirectoryOpenPoint``, built once per test process from
    /// `Scripts/open_faults.c` with the toolchain's `clang`; its path.
    package static func openFaultLibrary() async throws -> String {
        if let built = builtOpenFaultLibrary.withLock({ $0 }) { return built }
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts/open_faults.c").path
        let library = FileManager.default.temporaryDirectory.appendingPathComponent("open-faults-\(UUID().uuidString).so").path
        let clang = ["/opt/swift/usr/bin/clang", "/usr/bin/clang"].first { FileManager.default.isExecutableFile(atPath: $0) } ?? "clang"
        let build = try await RelayBinary.run(clang, ["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", library, source, "-ldl", "-lpthread"])
        try #require(build.status == 0, "building \(source) with \(clang) failed: \(build.stderr)")
        builtOpenFaultLibrary.withLock { $0 = library }
        return library
    }

    private static let builtOpenFaultLibrary = Mutex<String?>(nil)

    /// Turns `points` off in the running process `pid` (started with a control prefix); returns
    /// how many attempts it took (see ``control(_:pid:controlPrefix:)``).
    @discardableResult
    package static func disable(_ points: [String], pid: Int32, controlPrefix: String) async throws -> Int {
        try await control(points.map { "disable name=\($0)" }, pid: pid, controlPrefix: controlPrefix)
    }

    /// Turns `faults` on in the running process `pid` (started with a control prefix): for a point
    /// that must not fail while the process starts (see ``control(_:pid:controlPrefix:)``).
    @discardableResult
    package static func enable(_ faults: [Fault], pid: Int32, controlPrefix: String) async throws -> Int {
        try await control(faults.map(\.command), pid: pid, controlPrefix: controlPrefix)
    }

    /// Sends `commands` to the running process `pid` with `fiu-ctrl`; returns how many attempts it took.
    ///
    /// libfiu's remote-control thread answers through `open` and `write` of a FIFO, which are
    /// themselves wrapped: while those points are enabled an answer can fail and `fiu-ctrl` then
    /// waits for it forever. Enabling and disabling are idempotent, so a silent attempt is cut off
    /// after 5 s and made again, up to 4 times.
    package static func control(_ commands: [String], pid: Int32, controlPrefix: String) async throws -> Int {
        var arguments = ["-f", controlPrefix]
        for command in commands { arguments += ["-c", command] }
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
    /// the proof that faults were hit, and where. The relay's own writes report as `pwrite`, its
    /// own syncs as `fdatasync` (segments, cursors) and `fsync` (directories), its opens as `open`;
    /// SQLite's failures, whatever the call, as `sqlite`.
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
