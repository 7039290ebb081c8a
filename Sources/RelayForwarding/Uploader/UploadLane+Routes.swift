extension UploadLane {
    /// Waits until one of the destination's hosts lets a request through (its breaker closed, or
    /// due for a probe), and the stream's lease (when the log is kept in PostgreSQL) is held; the
    /// index of its route in ``routes``, or `nil` when cancelled meanwhile or the lease changed hands.
    ///
    /// The hosts take turns: each request starts looking at the host after the last one chosen, so
    /// healthy hosts share the load, and a failing host's share goes to the others once its breaker
    /// opens (it then gets only its probes).
    func waitForRoute() async -> Int? {
        // A sink naming no host has nowhere to send (``EventSink/hosts`` holds at least its first).
        guard !routes.isEmpty else { return nil }
        while !Task.isCancelled {
            guard await leaseHeld() else { return nil }
            var soonest: ContinuousClock.Instant?
            let now = ContinuousClock.now
            for offset in 0..<routes.count {
                let index = (nextRoute + offset) % routes.count
                switch routes[index].breaker.permission(now: now) {
                case .proceed:
                    nextRoute = (index + 1) % routes.count
                    return index
                case .waitUntil(let instant):
                    soonest = min(soonest ?? instant, instant)
                case .waitForProbe:
                    break
                }
            }
            // Every host is failing: wait for the first probe due, or for a probe's answer.
            let wake = min(soonest ?? now + .milliseconds(20), now + .milliseconds(20))
            do { try await Task.sleep(until: wake, clock: .continuous) } catch { return nil }
        }
        return nil
    }

    /// The host a healthy-host batch of hits goes to: the next whose breaker is closed and that has
    /// a pipeline, taking turns as ``waitForRoute()`` does; `nil` when none is (the hits then go one
    /// by one, each waiting for a host).
    func batchRoute() -> Int? {
        for offset in 0..<routes.count {
            let index = (nextRoute + offset) % routes.count
            guard routes[index].breaker.isClosed, routes[index].pipeline != nil else { continue }
            nextRoute = (index + 1) % routes.count
            return index
        }
        return nil
    }
}
