import HummingbirdCore
import Logging
import NIOCore

/// An HTTP/1.1 child channel (`base`) with a ``TrackingHitHandler`` placed right after
/// Hummingbird's connection-state handler, so that the state handler sees the hits answered on the
/// event loop as requests (idle timeout, graceful shutdown).
struct TrackingHitChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let makeHandler: @Sendable () -> TrackingHitHandler

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let operations = channel.pipeline.syncOperations
            let state = try operations.handler(type: HTTPConnectionStateHandler.self)
            try operations.addHandler(makeHandler(), position: .after(state))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
