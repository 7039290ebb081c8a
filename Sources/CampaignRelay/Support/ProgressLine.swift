import RelayCore

/// A one-line progress display on standard error, redrawn at most four times a second, only
/// when standard error is a terminal.
struct ProgressLine {
    private var error = StandardOutput.error()
    private let enabled: Bool
    private var lastDraw: Int64 = 0
    private var drawn = false

    init(enabled: Bool) {
        self.enabled = enabled && StandardOutput.error().isTerminal
    }

    mutating func update(_ text: @autoclosure () -> String) {
        guard enabled else { return }
        let now = SystemClock.monotonicNanoseconds()
        guard now - lastDraw >= 250_000_000 else { return }
        lastDraw = now
        error.write("\r\u{1B}[K" + text())
        error.flush()
        drawn = true
    }

    mutating func finish() {
        guard enabled, drawn else { return }
        error.write("\r\u{1B}[K")
        error.flush()
    }
}
