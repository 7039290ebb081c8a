/// The queue of an emulator with a capacity (``EmulatorFaults/capacity``): one worker serving a
/// request every `serviceTime`, in arrival order, and a bounded number of places to wait in.
///
/// It keeps only when the worker is free again: the requests admitted and not yet answered are the
/// service times between now and then, so a request's answer comes when the work ahead of it and
/// its own are done.
struct CapacityQueue: Sendable {
    /// Places when none are given: a Tomcat's default `acceptCount`.
    static let defaultPlaces = 100

    /// When the worker has served every request admitted so far.
    private var freeAt: ContinuousClock.Instant?

    /// Admits a request arriving at `now`, and returns when it is served (its answer is due); `nil`
    /// when the one being served and `places` waiting are already there.
    mutating func admit(now: ContinuousClock.Instant, serviceTime: Duration, places: Int) -> ContinuousClock.Instant? {
        let start = max(freeAt ?? now, now)
        // Requests admitted and not answered yet: the one being served and those waiting.
        let pending = Int(((start - now) / serviceTime).rounded(.up))
        guard pending <= places else { return nil }
        let served = start + serviceTime
        freeAt = served
        return served
    }
}
