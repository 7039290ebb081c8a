public import RelayCore

/// What kind of destination a sink is, as everything that lists destinations sees it: the lane's
/// label, whose events it takes, whether the events stop there, and how a summary counts what it
/// took. Each sink type declares its kind once (``TrackingHostSink/kind``, ``CentralRelaySink/kind``).
public struct SinkKind: Sendable, Hashable {
    /// Whose events a sink of this kind takes.
    public enum Scope: Sendable, Hashable {
        /// One tenant's (or the default tenant's): one lane per tenant, named `<label>_<tenant>`
        /// (the default tenant's is `<label>`), labelled with the tenant in metrics.
        case perTenant
        /// Every tenant's, in one lane named `<label>`, labelled `*` in metrics.
        case everyTenant
    }

    /// What the destination does with what it takes.
    public enum Role: Sendable, Hashable {
        /// It is the events' last stop (Campaign): its deliveries count in
        /// `relay_upload_delivered_total` and its retries in `relay_upload_retries_total`, its
        /// breaker shows as `closed`/`open`/`half-open`, and an erasure reports the registrations
        /// it took as forwarded.
        case delivers
        /// It hands the events on to another relay: its oldest owed event shows in
        /// `relay_upstream_oldest_waiting_seconds` and its silence in
        /// `relay_upstream_unreachable_seconds`, it shows as `reachable`/`unreachable`, and an
        /// erasure reports the registrations it took as handed on.
        case handsOn
    }

    /// How a summary (`upload`, `replay`) says how many events a lane of this kind took.
    public enum Tally: Sendable, Hashable {
        /// "1 tracking hit", "3 tracking hits": the count and a noun (plural with an "s").
        case counted(String)
        /// "3 to the central relay": the count and a phrase.
        case handedTo(String)

        /// The words for `count` events.
        public func text(_ count: Int) -> String {
            switch self {
            case .counted(let noun): "\(count) \(noun)\(count == 1 ? "" : "s")"
            case .handedTo(let phrase): "\(count) \(phrase)"
            }
        }
    }

    /// The lane's label: its name for the default tenant (or every tenant), the `lane` and
    /// `destination` label of its metrics, its `name` on the status page.
    public let label: String
    /// Whose events it takes.
    public let scope: Scope
    /// What the destination does with them.
    public let role: Role
    /// Whether it carries registrations, which an erasure must account for.
    public let carriesRegistrations: Bool
    /// How summaries count what it took.
    public let tally: Tally

    /// A kind labelled `label`.
    public init(label: String, scope: Scope, role: Role, carriesRegistrations: Bool, tally: Tally) {
        self.label = label
        self.scope = scope
        self.role = role
        self.carriesRegistrations = carriesRegistrations
        self.tally = tally
    }

    /// The name of this kind's lane for `tenant`: `tracking`, or `tracking_brand-a` for a tenant's
    /// (`_` is never in a tenant's name, so no two lanes' names collide); always the label for a
    /// kind that takes every tenant's events.
    public func laneName(of tenant: TenantName?) -> String {
        guard scope == .perTenant, let tenant else { return label }
        return "\(label)_\(tenant.text)"
    }

    /// The log cursor of this kind's lane for `tenant` (`upload-<lane name>`, ``Sink/cursorName``).
    public func cursorName(of tenant: TenantName?) -> String { "upload-\(laneName(of: tenant))" }

    /// The `tenant` label of this kind's series for `tenant`: the tenant's name, `default`, or `*`
    /// for a kind that takes every tenant's events.
    public func tenantLabel(_ tenant: TenantName?) -> String {
        scope == .everyTenant ? "*" : tenant.displayName
    }
}

extension SinkKind {
    /// The kinds of sink the relay is built with, configured or not: the ones whose metric series
    /// show from the start (at 0 while the relay does not forward there), and whose cursors an
    /// erasure run outside `serve` consults. A new built-in kind is a line here.
    public static let builtIn: [SinkKind] = [.campaignTracking, .campaignMarketing, .centralRelay]
}
