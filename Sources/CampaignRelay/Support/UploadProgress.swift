import RelayForwarding

/// Redraws upload progress on a terminal four times a second.
actor UploadProgress {
    private let statistics: @Sendable () async -> [UploadLane.Kind: LaneStatistics]
    private var line: ProgressLine

    init(uploader: Uploader, enabled: Bool) {
        self.init(enabled: enabled) { await uploader.statistics() }
    }

    init(enabled: Bool, statistics: @escaping @Sendable () async -> [UploadLane.Kind: LaneStatistics]) {
        self.statistics = statistics
        self.line = ProgressLine(enabled: enabled)
    }

    func report() async {
        while !Task.isCancelled {
            let lanes = await statistics()
            let text = lanes.sorted { $0.key.rawValue < $1.key.rawValue }.map { kind, stats in
                var part = "\(kind.rawValue): \(stats.delivered) delivered, backlog \(stats.backlog)"
                if stats.deadLettered > 0 { part += ", \(stats.deadLettered) dead-lettered" }
                if stats.retries > 0 { part += ", \(stats.retries) retries" }
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
