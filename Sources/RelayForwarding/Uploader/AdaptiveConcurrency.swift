/// How many requests a lane keeps in flight to one host, decided from the host's answers, without
/// I/O: the decisions of adaptive concurrency (additive increase, multiplicative decrease), apart
/// from the lanes that follow them (as ``CircuitBreakerStateMachine`` is apart from the breaker's
/// driver).
///
/// It starts at one request in flight. Answers are looked at in windows of about one round trip,
/// each window's mean round trip compared with the **baseline**, the fastest window mean seen,
/// renewed by any window as fast and replaced by the fastest of the windows since once it is
/// ``Settings/baselineHorizon`` old (10 s, as BBR keeps its minimum round trip): what the host
/// takes when it queues nothing of the lane's.
/// - a window with a sign of overload (a 429 or 503, a timeout, a connection refused or reset) halves
///   the limit, once per window however many requests failed in it;
/// - a window whose mean is more than ``Settings/risingRatio`` times the baseline, more than
///   ``Settings/risingSlack`` above it, and more than ``Settings/risingDeviations`` average
///   deviations above it, halves it too: the host queues what it is sent;
/// - a window whose mean is within ``Settings/nearRatio`` times the baseline, or
///   ``Settings/nearSlack`` of it, or ``Settings/nearDeviations`` average deviations of it, and in
///   which the limit was used in full, adds one request, up to the ceiling (`--concurrency`);
/// - in between, the limit holds.
///
/// The slack is for hosts answering in well under a millisecond (over loopback, on the same
/// machine), where a round trip twice as long is the scheduler's noise, not the host queueing. The
/// deviation (a moving average of how far each window's mean is from the moving average of the
/// means) is for a relay short of CPU: there its own scheduling adds milliseconds, unevenly, to
/// every round trip, and the fastest window of the last seconds is far below the usual one; the
/// thresholds widen with that spread, so the noise does not read as a host queueing and hold the
/// limit at one. The horizon lets the baseline follow a host that became slower for good.
public struct AdaptiveConcurrency: Sendable, Hashable {
    /// What it is set to do.
    public struct Settings: Sendable, Hashable {
        /// The most requests in flight (`--concurrency`).
        public var ceiling: Int
        /// A window's mean within this many times the baseline lets the limit grow.
        public var nearRatio: Double
        /// A window's mean within this of the baseline lets the limit grow, whatever the ratio.
        public var nearSlack: Duration
        /// A window's mean within this many average deviations of the baseline lets the limit grow.
        public var nearDeviations: Double
        /// A window's mean above this many times the baseline may be rising.
        public var risingRatio: Double
        /// A window's mean within this of the baseline is not rising, whatever the ratio.
        public var risingSlack: Duration
        /// A window's mean within this many average deviations of the baseline is not rising.
        public var risingDeviations: Double
        /// How long the fastest window mean stays the baseline.
        public var baselineHorizon: Duration
        /// The weight of each window in the moving average of the means and in the deviation (0…1).
        public var smoothing: Double
        /// The shortest window, however fast the host answers.
        public var minimumWindow: Duration

        /// Settings with the ceiling `ceiling`: growth within 1.5× the baseline, 1 ms or 2
        /// deviations of it; decrease beyond 2×, 2 ms and 4 deviations; a baseline kept 10 s;
        /// windows weigh 0.4 in the averages and last at least 5 ms.
        public init(
            ceiling: Int, nearRatio: Double = 1.5, nearSlack: Duration = .milliseconds(1), nearDeviations: Double = 2, risingRatio: Double = 2,
            risingSlack: Duration = .milliseconds(2), risingDeviations: Double = 4, baselineHorizon: Duration = .seconds(10),
            smoothing: Double = 0.4, minimumWindow: Duration = .milliseconds(5)
        ) {
            self.ceiling = max(1, ceiling)
            self.nearRatio = max(1, nearRatio)
            self.nearSlack = nearSlack
            self.nearDeviations = max(0, nearDeviations)
            self.risingRatio = max(self.nearRatio, risingRatio)
            self.risingSlack = max(nearSlack, risingSlack)
            self.risingDeviations = max(self.nearDeviations, risingDeviations)
            self.baselineHorizon = baselineHorizon
            self.smoothing = min(1, max(0.01, smoothing))
            self.minimumWindow = minimumWindow
        }
    }

    /// How an answer counts.
    public enum Signal: Sendable, Hashable {
        /// The host answered in time, whatever it answered (but overload): its round trip counts.
        case answered
        /// A sign of overload: 429, 503, a timeout, a connection refused or reset.
        case overloaded
        /// Says nothing of the host's load (a request never sent, a batch abandoned).
        case ignored
    }

    /// What a window ended with, for the lane's log and metrics.
    public enum Change: Sendable, Hashable {
        /// One more request in flight.
        case increased
        /// Halved after a sign of overload.
        case decreasedOnOverload
        /// Halved after the round trip rose past ``Settings/risingRatio`` times the baseline (and its slack and spread).
        case decreasedOnRisingRoundTrip
        /// The limit holds.
        case held
    }

    /// The settings.
    public let settings: Settings
    /// Requests in flight allowed now.
    public private(set) var limit = 1
    /// The fastest window mean of the last ``Settings/baselineHorizon``, which each window is
    /// compared with; `nil` before the first answer.
    public private(set) var baseline: Duration?
    /// When ``baseline`` was measured (or renewed by a window as fast).
    private var baselineAt: ContinuousClock.Instant?
    /// The fastest window mean since then: the baseline once the horizon has passed.
    private var nextBaseline: Duration?
    /// The moving average of the windows' means.
    public private(set) var averageRoundTrip: Duration?
    /// The moving average of how far the windows' means were from ``averageRoundTrip``.
    public private(set) var deviation: Duration = .zero
    /// The mean round trip of the last window that had answers; `nil` before the first.
    public private(set) var roundTrip: Duration?

    private var windowStart: ContinuousClock.Instant?
    private var windowTotal: Duration = .zero
    private var windowAnswers = 0
    private var windowOverloaded = false
    /// Whether the limit was used in full at some moment of the window.
    private var windowSaturated = false

    /// A limit of one, under `settings`.
    public init(settings: Settings) {
        self.settings = settings
    }

    /// A request starts, with `inFlight` requests (itself included) under way: a window in which
    /// the limit is reached is one where more might have been sent.
    public mutating func started(inFlight: Int, now: ContinuousClock.Instant) {
        if windowStart == nil { begin(now) }
        if inFlight >= limit { windowSaturated = true }
    }

    /// A request ended after `roundTrip` with `signal`; returns what changed when this closed a window.
    @discardableResult
    public mutating func ended(_ signal: Signal, roundTrip duration: Duration, now: ContinuousClock.Instant) -> Change? {
        if windowStart == nil { begin(now) }
        switch signal {
        case .answered:
            windowTotal += duration
            windowAnswers += 1
        case .overloaded:
            windowOverloaded = true
        case .ignored:
            return nil
        }
        // An overload ends the window at once: halving waits for no one.
        guard windowOverloaded || (windowAnswers > 0 && now - (windowStart ?? now) >= windowLength) else { return nil }
        return closeWindow(now: now)
    }

    /// How long a window lasts: a round trip at the baseline, at least ``Settings/minimumWindow``.
    private var windowLength: Duration { max(settings.minimumWindow, baseline ?? settings.minimumWindow) }

    private mutating func begin(_ now: ContinuousClock.Instant) {
        windowStart = now
        windowTotal = .zero
        windowAnswers = 0
        windowOverloaded = false
        windowSaturated = false
    }

    private mutating func closeWindow(now: ContinuousClock.Instant) -> Change {
        let mean = windowAnswers > 0 ? windowTotal / windowAnswers : nil
        if let mean { roundTrip = mean }
        let change: Change
        if windowOverloaded {
            change = .decreasedOnOverload
        } else if let mean, let base = baseline,
            mean > base + max(base * (settings.risingRatio - 1), settings.risingSlack, deviation * settings.risingDeviations)
        {
            change = .decreasedOnRisingRoundTrip
        } else if let mean,
            mean <= (baseline ?? mean) + max((baseline ?? mean) * (settings.nearRatio - 1), settings.nearSlack, deviation * settings.nearDeviations),
            windowSaturated, limit < settings.ceiling
        {
            change = .increased
        } else {
            change = .held
        }
        switch change {
        case .increased: limit += 1
        case .decreasedOnOverload, .decreasedOnRisingRoundTrip: limit = max(1, limit / 2)
        case .held: break
        }
        if let mean { learn(mean, now: now) }
        // The next window begins with its first request or answer.
        windowStart = nil
        return change
    }

    /// Takes a window's mean into the baseline (a faster one at once; once the baseline is older
    /// than the horizon, the fastest window since it), the moving average and the deviation.
    private mutating func learn(_ mean: Duration, now: ContinuousClock.Instant) {
        if baseline.map({ mean <= $0 }) ?? true {
            // As fast as the baseline: it is confirmed, and kept another horizon.
            (baseline, baselineAt, nextBaseline) = (mean, now, nil)
        } else {
            nextBaseline = min(nextBaseline ?? mean, mean)
            if let at = baselineAt, now - at >= settings.baselineHorizon {
                // The fastest window of the last horizon, not the last one: after a host sped up
                // and slowed again, or a queue came and went, the baseline is what it took at best.
                (baseline, baselineAt, nextBaseline) = (nextBaseline, now, nil)
            }
        }
        guard let average = averageRoundTrip else {
            averageRoundTrip = mean
            return
        }
        let gap = mean > average ? mean - average : average - mean
        deviation += (gap - deviation) * settings.smoothing
        averageRoundTrip = average + (mean - average) * settings.smoothing
    }
}
