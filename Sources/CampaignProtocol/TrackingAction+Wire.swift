public import RelayCore

extension TrackingAction {
    /// The `tag` sent in a tracking hit `id=h{messageId},{deliveryId},{tag}`: received for an
    /// impression, opened for an open or a click (Campaign does not tell them apart).
    public var wireTag: TrackingHitID.Tag {
        switch self {
        case .impression: .received
        case .open, .click: .opened
        }
    }

    /// The action a hit's tag stands for: an impression, or an open (an SDK's click reports as an
    /// open).
    public init(wireTag: TrackingHitID.Tag) {
        switch wireTag {
        case .received: self = .impression
        case .opened: self = .open
        }
    }
}
