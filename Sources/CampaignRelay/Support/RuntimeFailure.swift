/// A failure while running a command (a missing file, an unreachable host, a busy port): printed
/// as `Error: …` with exit status 1. Usage errors stay `ValidationError`s (usage, exit 64).
struct RuntimeFailure: Error, CustomStringConvertible {
    /// What failed and what to do.
    var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// "1 dead letter", "2 dead letters": a count and its noun, singular for 1 only; `plural` when
/// adding an "s" does not make it ("entry", "entries").
func counted<Count: BinaryInteger>(_ count: Count, _ singular: String, _ plural: String? = nil) -> String {
    "\(count) " + (count == 1 ? singular : plural ?? singular + "s")
}
