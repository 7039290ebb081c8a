/// How many requests a lane keeps in flight to one host, decided from the host's answers, without
/// I/O: the decisions of adaptive concurrency (additive increase, multiplicative decrease), apart
/// from the lanes that follow them (as ``CircuitBreakerStateMachine`` is apart from the breaker's
/// driver).
///
/// It starts at one request in flight. Answers are looked at in windows of about one round trip:
/// - a window with a sign of overload (a 429 or 503, a timeout, a connection refused or reset) halves
///   the limit, once per window however many requests failed in it;
/// - a window whose mean round trip is more than ``Settings/risingRatio`` times the baseline (and
///   more than ``Settings/risingSlack`` above it) lowers the limit the same way: the host queues
///   what it is sent;
/// - a window whose mean round trip stays within ``Settings/nearRatio`` of the baseline (or within
///   ``Settings/nearSlack`` of it), and in which the limit was used in full, adds one request, up
///   to the ceiling (`--concurrency`);
/// - in between, the limit holds.
///
/// The slack is for hosts answering in well under a millisecond (over loopback, on the same
/// machine): there a round trip twice as long is the scheduler's noise, not the host queueing, and
/// a ratio alone would hold the limit low for a host with room to spare.
///
/// The baseline is the round trip of a host that is not queueing this lane's requests: it drops to
/// any faster round trip at once, and follows the round trips seen at a limit of one (where the lane
/// queues nothing) slowly upwards, so a host that became slower for good is not held to a baseline
/// it can no longer meet.
public struct AdaptiveConcurrency: Sendable, Hashable {
    /// What it is set to do.
    public struct Settings: Sendable, Hashable {
        /// The most requests in flight (`--concurrency`).
        public var ceiling: Int
        /// A window's mean round trip within this many times the baseline lets the limit grow.
        public var nearRatio: Double
        /// A window's mean round trip above this many times the baseline lowers the limit.
        public var risingRatio: Double
        /// A mean round trip within this of the baseline is near it, whatever the ratio.
        public var nearSlack: Duration
        /// A mean round trip within this of the baseline is not rising, whatever the ratio.
        public var risingSlack: Duration
        /// The shortest window, however fast the host answers.
        public var minimumWindow: Duration
        /// A window's mean round trip at a limit of one moves the baseline up by the gap divided by this.
        public var baselineDriftDivisor: Int

        /// Settings with the ceiling `ceiling`: growth within 1.5× the baseline or 1 ms of it,
        /// decrease beyond 2× and 2 ms, windows of at least 5 ms, a baseline drifting up by a tenth
        /// of the gap per window.
        public init(
            ceiling: Int, nearRatio: Double = 1.5, risingRatio: Double = 2, nearSlack: Duration = .milliseconds(1),
            risingSlack: Duration = .milliseconds(2), minimumWindow: Duration = .milliseconds(5), baselineDriftDivisor: Int = 10
        ) {
            self.ceiling = max(1, ceiling)
            self.nearRatio = nearRatio
            self.risingRatio = max(nearRatio, risingRatio)
            self.nearSlack = nearSlack
            self.risingSlack = max(nearSlack, risingSlack)
            self.minimumWindow = minimumWindow
            self.baselineDriftDivisor = max(1, baselineDriftDivisor)
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
        /// Halved after the round trip rose past ``Settings/risingRatio`` times the baseline.
        case decreasedOnRisingRoundTrip
        /// The limit holds.
        case held
    }

    /// The settings.
    public let settings: Settings
    /// Requests in flight allowed now.
    public private(set) var limit = 1
    /// The round trip of the host when it queues nothing of this lane's; `nil` before the first answer.
    public private(set) var baseline: Duration?
    /// The mean round trip of the last window that had answers; `nil` before the first.
    public private(set) var roundTrip: Duration?

    private var windowStart: ContinuousClock.Instant?
    private var windowTotal: Duration = .zero
    private var windowAnswers = 0
    private var windowOverloaded = false
    /// Whether the limit was used in full at some moment of the window.
    private var windowSaturated = false
    /// The limit the window's requests were sent under: a window that began at a limit of one
    /// measures a host not queueing this lane's requests.
    private var windowLimit = 1

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
            // A faster round trip than the baseline is the baseline at once.
            if baseline.map({ duration < $0 }) ?? true { baseline = duration }
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
        windowLimit = limit
    }

    private mutating func closeWindow(now: ContinuousClock.Instant) -> Change {
        let mean = windowAnswers > 0 ? windowTotal / windowAnswers : nil
        if let mean { roundTrip = mean }
        let change: Change
        if windowOverloaded {
            change = .decreasedOnOverload
        } else if let mean, let base = baseline, mean > max(base * settings.risingRatio, base + settings.risingSlack) {
            change = .decreasedOnRisingRoundTrip
        } else if let mean, let base = baseline, mean <= max(base * settings.nearRatio, base + settings.nearSlack), windowSaturated,
            limit < settings.ceiling
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
        // At a limit of one this lane queues nothing: a slower mean is the host's own, and the
        // baseline follows it a little (it fell to any faster answer already).
        if windowLimit == 1, !windowOverloaded, let mean, let base = baseline, mean > base {
            baseline = base + (mean - base) / settings.baselineDriftDivisor
        }
        // The next window begins with its first request or answer.
        windowStart = nil
        return change
    }
}
