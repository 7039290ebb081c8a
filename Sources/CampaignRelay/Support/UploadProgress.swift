import RelayForwarding

/// Redraws upload progress on a terminal four times a second.
actor UploadProgress {
    private let statistics: @Sendable () async -> [String: LaneStatistics]
    private var line: ProgressLine

    init(enabled: Bool, statistics: @escaping @Sendable () async -> [String: LaneStatistics]) {
        self.statistics = statistics
        self.line = ProgressLine(enabled: enabled)
    }

    func report() async {
        while !Task.isCancelled {
            let lanes = await statistics()
            let text = lanes.sorted { $0.key < $1.key }.map { lane, stats in
                var part = "\(lane): \(stats.delivered) delivered, backlog \(stats.backlog)"
                if stats.deadLettered > 0 { part += ", \(stats.deadLettered) dead-lettered" }
                if stats.retries > 0 { part += ", \(counted(stats.retries, "retry", "retries"))" }
                if let failure = stats.lastFailure { part += " (failing: \(failure))" }
                return part
            }.joined(separator: " | ")
            line.update(text)
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    func finish() {
        line.finish()
    }
}
