import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#endif

/// A child process started with `posix_spawn` and watched with `waitpid`: what the tests use
/// instead of Foundation's `Process`.
///
/// Foundation learns that its child ended when a socket the child inherited is closed, and only
/// then calls `waitpid`. A child spawned at the same moment by another test (they run in parallel)
/// can inherit that socket too, and then `isRunning` stays true and `waitUntilExit` blocks until
/// that other child ends: a CI run saw a validator that had printed its verdict "still running"
/// 100 s past its deadline. Here `waitpid(pid, WNOHANG)` answers for this child alone, every
/// descriptor the tests make for a child is close-on-exec, and each child closes every descriptor
/// above standard error before it runs, so no child holds another's pipe open.
public final class SpawnedProcess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case nullDevice
        /// A pipe; the parent's end is ``standardInput``, ``standardOutput`` or ``standardError``.
        case pipe
        /// A file, created or truncated.
        case file(String)
        /// For standard error only: wherever standard output goes (one pipe for both, say).
        case sameAsOutput
    }

    /// How the child ended, with Foundation's names so that tests read as before.
    public enum TerminationReason: Sendable, Equatable {
        /// It called `exit` (or returned from `main`); the status is its exit code.
        case exit
        /// A signal ended it; the status is the signal's number.
        case uncaughtSignal
    }

    /// A failure to start the child.
    public struct SpawnFailure: Error, CustomStringConvertible {
        /// What failed, with the system's reason.
        public var description: String
    }

    /// The child's process id.
    public let processIdentifier: Int32
    /// The executable's path.
    public let executable: String
    /// The arguments after the executable.
    public let arguments: [String]
    /// The parent's (writing) end of the child's standard input, for ``Stream/pipe``. Whoever
    /// writes closes it, so that the child reads its end.
    public let standardInput: Int32?
    /// The parent's (reading) end of the child's standard output, for ``Stream/pipe``. Whoever reads
    /// it to its end closes it.
    public let standardOutput: Int32?
    /// The parent's (reading) end of the child's standard error, for ``Stream/pipe``.
    public let standardError: Int32?
    private let ending = NIOLockedValueBox<(reason: TerminationReason, status: Int32)?>(nil)

    /// Starts `executable` (a path, not looked up in `PATH`) with `arguments`, the test process's
    /// environment with `environment` added, and its standard streams where `input`, `output` and
    /// `error` say; every signal starts at its default disposition and none is blocked.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], input: Stream = .nullDevice,
        output: Stream = .nullDevice, error: Stream = .nullDevice
    ) throws(SpawnFailure) {
        self.executable = executable
        self.arguments = arguments
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var childEnds: [Int32] = []
        defer { for descriptor in childEnds { close(descriptor) } }
        var parentEnds: [Int32] = []
        func route(_ stream: Stream, to target: Int32, reading: Bool) throws(SpawnFailure) -> Int32? {
            switch stream {
            case .nullDevice:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", reading ? O_RDONLY : O_WRONLY, 0)
                return nil
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                return nil
            case .sameAsOutput:
                posix_spawn_file_actions_adddup2(&actions, 1, target)
                return nil
            case .pipe:
                var ends: [Int32] = [0, 0]
                guard HiddenGlibc.pipe2(&ends, O_CLOEXEC) == 0 else {
                    for descriptor in parentEnds { close(descriptor) }
                    throw SpawnFailure(description: "pipe2 failed: \(String(cString: strerror(errno)))")
                }
                let (childEnd, parentEnd) = reading ? (ends[0], ends[1]) : (ends[1], ends[0])
                childEnds.append(childEnd)
                parentEnds.append(parentEnd)
                // dup2 onto 0, 1 or 2 clears close-on-exec on the copy the child keeps.
                posix_spawn_file_actions_adddup2(&actions, childEnd, target)
                return parentEnd
            }
        }
        standardInput = try route(input, to: 0, reading: true)
        standardOutput = try route(output, to: 1, reading: false)
        standardError = try route(error, to: 2, reading: false)
        HiddenGlibc.addCloseFrom(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        // The test process ignores SIGPIPE (a child that stops reading must not kill it); ignored
        // signals survive exec, so each child gets the defaults back.
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let variables = ProcessInfo.processInfo.environment.merging(environment) { _, added in added }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            for descriptor in parentEnds { close(descriptor) }
            throw SpawnFailure(description: "cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        processIdentifier = pid
    }

    /// Whether the child has not ended yet (the first call that finds it ended collects its status).
    public var isRunning: Bool { collect() == nil }

    /// How the child ended; `.exit` while it still runs (check ``isRunning`` first).
    public var terminationReason: TerminationReason { collect()?.reason ?? .exit }

    /// The exit code or the signal that ended the child; 0 while it still runs.
    public var terminationStatus: Int32 { collect()?.status ?? 0 }

    /// Waits for the child to end, checking every millisecond, with no deadline: for a child just
    /// sent SIGKILL, or one the caller knows ends by itself. Blocks its thread: call it on a thread
    /// of its own (``CooperativePool/refuseBlocking(_:fileID:filePath:line:column:)`` fails a test that does not);
    /// from a task, await ``exited()``.
    public func waitUntilExit(fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column) {
        CooperativePool.refuseBlocking("waitUntilExit() of \(executable)", fileID: fileID, filePath: filePath, line: line, column: column)
        while isRunning { usleep(1_000) }
    }

    /// Waits for the child to end, checking every millisecond without holding a thread, with no
    /// deadline: for a child just sent SIGKILL, or one the caller knows ends by itself.
    public func exited() async {
        while isRunning { try? await Task.sleep(for: .milliseconds(1)) }
    }

    /// Waits at most `seconds` for the child to end, without holding a thread; returns whether it did.
    public func exited(within seconds: Double) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        return !isRunning
    }

    /// The ending, collecting it with `waitpid(WNOHANG)` if nobody has yet.
    private func collect() -> (reason: TerminationReason, status: Int32)? {
        ending.withLockedValue { ending in
            if let ending { return ending }
            var status: Int32 = 0
            var collected: pid_t
            repeat { collected = waitpid(processIdentifier, &status, WNOHANG) } while collected < 0 && errno == EINTR
            if collected == processIdentifier {
                // WIFEXITED, WEXITSTATUS and WTERMSIG, spelled out (they are C macros).
                let signal = status & 0x7f
                ending = signal == 0 ? (.exit, (status >> 8) & 0xff) : (.uncaughtSignal, signal)
            } else if collected < 0 {
                // ECHILD: not this process's child any more, so it has ended, how is unknown.
                ending = (.exit, -1)
            }
            return ending
        }
    }
}

/// Two glibc functions the Glibc module does not show (glibc declares them only under
/// `_GNU_SOURCE`), looked up by name in the loaded C library.
private enum HiddenGlibc {
    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

    /// `pipe2(ends, flags)`; where it is missing, `pipe` and then the flag on each end (not atomic,
    /// which only matters to a child another thread spawns in between).
    static func pipe2(_ ends: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32 {
        if let symbol = dlsym(dlopen(nil, RTLD_NOW), "pipe2") {
            return unsafeBitCast(symbol, to: Pipe2.self)(ends, flags)
        }
        guard pipe(ends) == 0 else { return -1 }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        return 0
    }

    /// `posix_spawn_file_actions_addclosefrom_np(actions, first)` (glibc 2.34 and later): the child
    /// closes every descriptor from `first` on before it runs. Without it, what the test process
    /// opens close-on-exec stays out of the child all the same.
    static func addCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ first: Int32) {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else { return }
        _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(actions, first)
    }
}
