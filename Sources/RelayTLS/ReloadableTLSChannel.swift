public import HummingbirdCore
public import Logging
public import NIOCore
import NIOSSL

/// A child channel that speaks TLS with the context a ``TLSCertificateStore`` holds at accept
/// time, then hands the connection to `base` (HTTP/1.1).
///
/// Hummingbird's own `TLSChannel` fixes its context when the server starts; this one reads it per
/// connection, which is what makes a certificate reload take effect without a restart.
public struct ReloadableTLSChannel<BaseChannel: ServerChildChannel>: ServerChildChannel {
    public typealias Value = BaseChannel.Value

    let base: BaseChannel
    let certificates: TLSCertificateStore

    /// Wraps `base` in TLS with `certificates`.
    public init(_ base: BaseChannel, certificates: TLSCertificateStore) {
        self.base = base
        self.certificates = certificates
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let context = certificates.current
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    public func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension ReloadableTLSChannel: HTTPChannelHandler where BaseChannel: HTTPChannelHandler {
    public var responder: HTTPChannelHandler.Responder { base.responder }
}

extension HTTPServerBuilder {
    /// HTTP/1.1, over TLS when `certificates` is given.
    public static func http1(tls certificates: TLSCertificateStore?, configuration: HTTP1Channel.Configuration = .init()) -> HTTPServerBuilder {
        guard let certificates else { return .http1(configuration: configuration) }
        return HTTPServerBuilder { responder in
            ReloadableTLSChannel(HTTP1Channel(responder: responder, configuration: configuration), certificates: certificates)
        }
    }
}
