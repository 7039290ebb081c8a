/// What happened to a push notification, as the relay's model keeps it.
///
/// Campaign's wire protocol has only two tags (1 = received, 2 = opened/clicked); the relay keeps
/// `open` and `click` apart so the aggregator can count them separately, and maps both to tag 2
/// when forwarding.
public enum TrackingAction: String, Sendable, Hashable, CaseIterable {
    /// The notification was displayed (Campaign tag 1, "print").
    case impression
    /// The notification was opened (Campaign tag 2).
    case open
    /// An action of the notification was clicked (Campaign tag 2).
    case click
}
