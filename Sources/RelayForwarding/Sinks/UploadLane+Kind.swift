public import RelayCore
public import RelayLog

extension UploadLane {
    /// The kinds of events the Campaign hosts take, and Campaign's rules for them: what the two
    /// Campaign sinks (``TrackingHostSink``, ``MarketingHostSink``) are built on. Nothing outside
    /// those sinks (and tests that name their lanes) needs it: everything else reads a sink's
    /// ``SinkKind``.
    public enum Kind: String, Sendable, Hashable {
        /// Tracking hits, to the tracking host.
        case tracking
        /// Registrations, to the marketing host.
        case marketing

        /// Whether `event` is of this kind and of `tenant` (`nil`: the default tenant, whose hosts
        /// are the relay's own options): a tenant's events go to its own hosts, never to another's.
        public func carries(_ event: Event, of tenant: TenantName? = nil) -> Bool {
            switch (self, event) {
            case (.tracking, .tracking(let hit)): hit.tenant == tenant
            case (.marketing, .registration(let registration)): registration.tenant == tenant
            default: false
            }
        }

        /// The name of this kind's lane for `tenant`: `tracking`, or `tracking_brand-a` for a
        /// tenant's (`_` is never in a tenant's name, so no two lanes' names collide).
        public func laneName(of tenant: TenantName?) -> String { tenant.map { "\(rawValue)_\($0.text)" } ?? rawValue }

        /// The log cursor of the normal uploader for this lane.
        public var cursorName: String { "upload-\(rawValue)" }

        /// The normal uploader's lane as a consumer of the log: its cursor is its position.
        public var consumer: LogConsumerDeclaration { .cursorFile(cursorName) }

        /// Campaign's order of registrations: those of one device token (of one app, on one
        /// platform) go out in log order, so that a token refresh or an opt-out never overtakes
        /// the registration before it; everything else may overtake anything.
        public static func deviceTokenOrder(_ event: Event) -> String? {
            guard case .registration(let registration) = event else { return nil }
            return "\(registration.platform.rawValue)\u{1F}\(registration.integrationKey)\u{1F}\(registration.registrationToken)"
        }
    }
}
