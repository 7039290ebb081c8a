public import CampaignProtocol
public import NIOCore
import NIOHTTP1
import NIOPosix
public import NIOSSL
import RelayCore

/// Sends batches of tracking hits (`GET` requests without bodies) to one host over a few
/// keep-alive HTTP/1.1 connections, doing all the work on one event loop.
///
/// AsyncHTTPClient hops between its event loop and Swift's task pool several times per request;
/// for a drain of millions of hits that hopping, not the network, is the cost. Here a whole batch
/// goes to the event loop in one hop and its outcomes come back in one. Each connection sends its
/// next hit as soon as the previous answer arrived (no pipelining: one request in flight per
/// connection, as the SDKs do).
public final class TrackingHitPipeline: Sendable {
    let host: CampaignHost
    let eventLoop: any EventLoop
    let connections: Int
    let timeout: TimeAmount
    let tls: NIOSSLContext?
    let retryStatuses: Set<Int>
    /// What every request to `host` starts and ends with.
    let requestBytes: HitRequestBytes
    private let idle: NIOLoopBoundBox<IdleConnections>

    /// Connections not serving a batch; touched only on `eventLoop`.
    final class IdleConnections {
        var channels: [any Channel] = []
    }

    /// A pipeline to `host` keeping up to `connections` connections, retrying `retryStatuses`;
    /// `tls` is the client configuration for an `https` host.
    ///
    /// A redirection comes back as ``DeliveryOutcome/redirected(status:location:)``: the pipeline
    /// serves one host and does not follow it.
    ///
    /// - Throws: when TLS cannot be set up for an `https` host.
    public init(
        host: CampaignHost, connections: Int, timeout: Duration, retryStatuses: Set<Int> = DeliveryOutcome.defaultRetryStatuses,
        tls: TLSConfiguration = .makeClientConfiguration(), eventLoop: (any EventLoop)? = nil
    ) throws {
        self.host = host
        let loop = eventLoop ?? MultiThreadedEventLoopGroup.singleton.next()
        self.eventLoop = loop
        self.connections = max(1, connections)
        self.timeout = .nanoseconds(timeout.nanoseconds)
        self.tls = host.scheme == "https" ? try NIOSSLContext(configuration: tls) : nil
        self.retryStatuses = retryStatuses
        self.requestBytes = HitRequestBytes(host: host)
        self.idle = NIOLoopBoundBox.makeBoxSendingValue(IdleConnections(), eventLoop: loop)
    }

    /// Sends every request and returns one outcome per request, in order. Never throws: a failed
    /// connection or a timeout is a retryable outcome of the hit it was carrying.
    ///
    /// Each hit goes out under a permit of `limiter` (the lane's limit of requests in flight,
    /// which the answers adapt), on at most ``connections`` connections; without one, on all of them.
    public func send(_ requests: [CampaignRequest], limiter: ConcurrencyLimiter? = nil) async -> [DeliveryOutcome] {
        guard !requests.isEmpty else { return [] }
        let promise = eventLoop.makePromise(of: [DeliveryOutcome].self)
        eventLoop.execute {
            let run = BatchRun(requests: requests, promise: promise, limiter: limiter)
            let workers = min(self.connections, requests.count)
            for _ in 0..<workers { self.withPermit(for: run) { permit in self.acquire(for: run, permit: permit) } }
        }
        return (try? await promise.futureResult.get()) ?? requests.map { _ in .retryable(reason: "the batch was abandoned", retryAfter: nil) }
    }

    /// Calls `body` on the event loop with a permit of `run`'s limiter (`nil` without one), once
    /// the limit has room. With nothing left to send by then, the permit goes back unused and
    /// `otherwise` runs instead (a connection waiting for the permit is idle again).
    private func withPermit(
        for run: BatchRun, otherwise: @escaping () -> Void = {}, _ body: @escaping (ConcurrencyLimiter.Permit?) -> Void
    ) {
        eventLoop.assertInEventLoop()
        guard let limiter = run.limiter else { return body(nil) }
        // The common case, once per hit: room now, taken without a closure or an allocation.
        if let permit = limiter.tryAcquire() { return body(permit) }
        let bound = NIOLoopBound((run, body, otherwise), eventLoop: eventLoop)
        let loop = eventLoop
        limiter.acquire { permit in
            let go: @Sendable () -> Void = {
                let (run, body, otherwise) = bound.value
                guard run.next < run.requests.count, !run.halted else {
                    limiter.release(permit, .ignored)
                    run.haltRemaining()
                    otherwise()
                    return
                }
                body(permit)
            }
            if loop.inEventLoop { go() } else { loop.execute(go) }
        }
    }

    /// Closes the idle connections.
    public func shutdown() async {
        let closed = eventLoop.submit { () -> [any Channel] in
            let channels = self.idle.value.channels
            self.idle.value.channels = []
            return channels
        }
        for channel in (try? await closed.get()) ?? [] { try? await channel.close() }
    }

    /// One batch being served; lives on the event loop.
    final class BatchRun {
        let requests: [CampaignRequest]
        var outcomes: [DeliveryOutcome?]
        var next = 0
        /// Set at the first retryable answer: the rest of the batch is not sent.
        var halted = false
        var remaining: Int
        let promise: EventLoopPromise<[DeliveryOutcome]>
        /// The lane's limit of requests in flight, each hit's permit taken from it.
        let limiter: ConcurrencyLimiter?

        init(requests: [CampaignRequest], promise: EventLoopPromise<[DeliveryOutcome]>, limiter: ConcurrencyLimiter?) {
            self.requests = requests
            self.outcomes = Array(repeating: nil, count: requests.count)
            self.remaining = requests.count
            self.promise = promise
            self.limiter = limiter
        }

        func finish(_ index: Int, _ outcome: DeliveryOutcome) {
            outcomes[index] = outcome
            remaining -= 1
            if remaining == 0 { promise.succeed(outcomes.map { $0 ?? .notSent }) }
        }

        /// Gives up the hits not sent yet.
        func haltRemaining() {
            halted = true
            while next < requests.count {
                let index = next
                next += 1
                finish(index, .notSent)
            }
        }
    }

    /// Takes an idle connection (or opens one) and starts serving `run` on it, its first hit under
    /// `permit`.
    private func acquire(for run: BatchRun, permit: ConcurrencyLimiter.Permit?) {
        eventLoop.assertInEventLoop()
        guard run.next < run.requests.count else {
            if let permit { run.limiter?.release(permit, .ignored) }
            return
        }
        while let channel = idle.value.channels.popLast() {
            if channel.isActive {
                serve(run, on: channel, permit: permit)
                return
            }
        }
        let bootstrap = ClientBootstrap(group: eventLoop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(timeout)
            .channelInitializer { [tls, host] channel in
                do {
                    if let tls {
                        let serverName = host.host.contains(":") || host.host.allSatisfy({ $0.isNumber || $0 == "." }) ? nil : host.host
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    }
                    let decoder = HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes)
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HitResponseDecoder(decoder: decoder)))
                    try channel.pipeline.syncOperations.addHandler(HitResponseHandler(decoder: decoder))
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
        let port = host.port ?? (host.scheme == "https" ? 443 : 80)
        let bound = BoundRun(run: NIOLoopBound(run, eventLoop: eventLoop), permit: permit)
        bootstrap.connect(host: host.host, port: port).hop(to: eventLoop).whenComplete { result in
            let run = bound.run.value
            switch result {
            case .success(let channel):
                self.serve(run, on: channel, permit: bound.permit)
            case .failure(let error):
                // No connection: one hit records the failure, the rest go back unsent.
                let outcome = DeliveryOutcome.retryable(reason: "cannot reach \(self.host): \(TransportErrorText.describe(error))", retryAfter: nil)
                if let permit = bound.permit { run.limiter?.release(permit, ConcurrencyLimiter.signal(of: outcome)) }
                guard run.next < run.requests.count else { return }
                let index = run.next
                run.next += 1
                run.finish(index, outcome)
                run.haltRemaining()
            }
        }
    }

    /// A batch and a permit, handed to a connect's callback.
    private struct BoundRun: Sendable {
        var run: NIOLoopBound<BatchRun>
        var permit: ConcurrencyLimiter.Permit?
    }

    /// Sends `run`'s next request on `channel` under `permit`, and the one after (under a permit
    /// of its own) when it is answered.
    private func serve(_ run: BatchRun, on channel: any Channel, permit: ConcurrencyLimiter.Permit?) {
        eventLoop.assertInEventLoop()
        guard run.next < run.requests.count, !run.halted else {
            if let permit { run.limiter?.release(permit, .ignored) }
            run.haltRemaining()
            idle.value.channels.append(channel)
            return
        }
        guard let handler = try? channel.pipeline.syncOperations.handler(type: HitResponseHandler.self) else {
            channel.close(promise: nil)
            acquire(for: run, permit: permit)
            return
        }
        let index = run.next
        run.next += 1
        let request = run.requests[index]
        guard requestBytes.isValidTarget(request.pathAndQuery) else {
            // Never from a validated log; sent one at a time instead, where the HTTP client says why.
            if let permit { run.limiter?.release(permit, .ignored) }
            run.halted = true
            let reason = "\(host): the request target \(request.pathAndQuery) has bytes a request line does not allow"
            run.finish(index, .retryable(reason: reason, retryAfter: nil))
            run.haltRemaining()
            idle.value.channels.append(channel)
            return
        }
        handler.send(requestBytes.request(for: request.pathAndQuery, allocator: channel.allocator), on: channel, timeout: timeout) { result in
            let outcome: DeliveryOutcome
            switch result {
            case .success(let response):
                if DeliveryOutcome.redirectStatuses.contains(response.status), let location = response.location {
                    outcome = .redirected(status: response.status, location: location)
                } else {
                    outcome = DeliveryOutcome.classify(
                        status: response.status, retryAfter: response.retryAfter, body: response.body, now: SystemClock.wallSeconds(),
                        retryStatuses: self.retryStatuses
                    )
                }
                if let permit { run.limiter?.release(permit, ConcurrencyLimiter.signal(of: outcome)) }
                if case .retryable = outcome { run.halted = true }
                run.finish(index, outcome)
                if response.keepAlive {
                    self.withPermit(for: run, otherwise: { self.idle.value.channels.append(channel) }) { permit in
                        self.serve(run, on: channel, permit: permit)
                    }
                } else {
                    channel.close(promise: nil)
                    self.withPermit(for: run) { permit in self.acquire(for: run, permit: permit) }
                }
            case .failure(let error):
                outcome = .retryable(reason: "\(self.host): \(TransportErrorText.describe(error))", retryAfter: nil)
                if let permit { run.limiter?.release(permit, ConcurrencyLimiter.signal(of: outcome)) }
                run.halted = true
                run.finish(index, outcome)
                channel.close(promise: nil)
                run.haltRemaining()
            }
        }
    }

}
