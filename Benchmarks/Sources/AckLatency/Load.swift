import Dispatch

/// Monotonic nanoseconds.
func monotonicNanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// Drives a store with appends of one batch each.
struct Load: Sendable {
    /// Appends the `n`-th batch durably (batches differ, so compression sees realistic data).
    let append: @Sendable (_ n: Int) async throws -> Void
    /// Events in one batch.
    let batchSize: Int

    /// Closed loop: `concurrency` appenders, each appending again as soon as its last append
    /// returned, for `seconds`. Returns events per second, the most the store sustains.
    func saturate(concurrency: Int, seconds: Double) async throws -> Double {
        let start = monotonicNanoseconds()
        let deadline = start + UInt64(seconds * 1e9)
        let batches = try await withThrowingTaskGroup(of: Int.self) { group in
            for appender in 0..<concurrency {
                group.addTask {
                    var done = 0
                    while monotonicNanoseconds() < deadline {
                        try await append(appender + done * concurrency)
                        done += 1
                    }
                    return done
                }
            }
            return try await group.reduce(0, +)
        }
        return Double(batches * batchSize) / (Double(monotonicNanoseconds() - start) / 1e9)
    }

    /// Open loop: batches are due at a fixed rate of `eventsPerSecond` whatever the store's speed,
    /// each appended by its own task. A batch's latency runs from when it was due (not from when it
    /// was sent), so a stalled store or a late driver counts against the store, as it would for a
    /// client. Returns the latencies and the achieved rate in events per second.
    func paced(eventsPerSecond: Double, seconds: Double) async throws -> (LatencySummary, Double) {
        let recorder = LatencyRecorder()
        let interval = Double(batchSize) / eventsPerSecond * 1e9
        let total = Int(seconds * eventsPerSecond) / batchSize
        let start = monotonicNanoseconds()
        try await withThrowingTaskGroup(of: Void.self) { group in
            var sent = 0
            while sent < total {
                let elapsed = Double(monotonicNanoseconds() - start)
                let due = min(total, Int(elapsed / interval) + 1)
                while sent < due {
                    let scheduled = start + UInt64(Double(sent) * interval)
                    let index = sent
                    group.addTask {
                        try await append(index)
                        recorder.record(monotonicNanoseconds() &- scheduled)
                    }
                    sent += 1
                }
                try await Task.sleep(for: .microseconds(100))
            }
            try await group.waitForAll()
        }
        let achieved = Double(total * batchSize) / (Double(monotonicNanoseconds() - start) / 1e9)
        return (recorder.summary(), achieved)
    }
}
