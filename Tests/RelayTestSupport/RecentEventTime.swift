package import RelayCore

/// The time of the fixtures' events that are forwarded through failures: an hour before this test
/// process started, to the second. The uploader dead-letters an event older than its maximum age
/// (7 days) at its first retryable failure, so a fixed date would turn such fixtures into dead
/// letters a week after it was written.
package let recentEventTime: EventTime = {
    let hourAgo = EventTime.now().nanosecondsSinceEpoch - 3_600_000_000_000
    return EventTime(nanosecondsSinceEpoch: hourAgo - hourAgo % 1_000_000_000)
}()
