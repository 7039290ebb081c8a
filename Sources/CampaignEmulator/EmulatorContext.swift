public import Hummingbird
public import NIOCore

/// The request context of the emulator: Hummingbird's, plus the connection (to drop it on purpose).
public struct EmulatorContext: RequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The client's connection.
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
