import Logging
import NIOConcurrencyHelpers
import Prometheus
import RelayCore

/// Registration form fields the relay does not know (a newer SDK): accepted and forwarded as they
/// came, each name logged the first time it is seen and counted in
/// `relay_sdk_unknown_fields_total{field=…}`.
///
/// Names come from the network, so at most ``maximumNames`` get a log line and a label of their
/// own; the rest are counted under `field="(other)"`, which keeps the metric's size bounded.
final class UnknownFormFields: Sendable {
    /// The most distinct names logged and labelled.
    static let maximumNames = 64

    private let seen = NIOLockedValueBox<[String: Counter]>([:])
    private let metrics: RelayMetrics
    private let logger: Logger

    init(metrics: RelayMetrics, logger: Logger) {
        self.metrics = metrics
        self.logger = logger
    }

    /// Counts `names`, seen in one registration, logging the ones never seen before.
    func saw(_ names: [String], platform: Platform) {
        var firstSeen: [String] = []
        let counters = seen.withLockedValue { known -> [Counter] in
            names.map { name in
                if let counter = known[name] { return counter }
                let label = known.count < Self.maximumNames ? name : "(other)"
                if let counter = known[label] { return counter }
                let counter = metrics.unknownFormField(label)
                known[label] = counter
                if label == name { firstSeen.append(name) }
                return counter
            }
        }
        for counter in counters { counter.increment() }
        for name in firstSeen {
            logger.notice(
                "accepted a registration form field the relay does not know; it is forwarded as received",
                metadata: ["field": "\(name)", "platform": "\(platform.rawValue)"]
            )
        }
    }
}
