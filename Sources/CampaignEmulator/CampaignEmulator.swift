import CampaignProtocol
import CampaignSDKForm
public import Hummingbird
public import Logging
import NIOConcurrencyHelpers
import NIOCore
import RelayCore
public import RelayTLS

#if canImport(Glibc)
    import Glibc
#endif

/// An emulator of the Campaign marketing and tracking hosts: the SDK endpoints, answering 200 and
/// recording what arrives, with injectable faults, and an inspection API under `/emulator/`.
///
/// Endpoints: `POST /nms/mobile/1/registerIOS.jssp`, `POST /nms/mobile/1/registerAndroid.jssp`,
/// `GET /r/?id=h{messageId},{deliveryId},{tag}`, `GET /r/test`; `GET /emulator/hits` (`?messages=1`:
/// each hit; `?seconds=1`: the requests accepted in each second),
/// `GET /emulator/registrations`, `GET /emulator/requests?limit=N`, `GET|POST /emulator/faults`,
/// `POST /emulator/reset`.
public final class CampaignEmulator: Sendable {
    /// What arrived.
    public let recorder: EmulatorRecorder
    /// Registrations wait here, once they arrived whole, before they are answered (open unless a
    /// test closes it).
    public let registrationGate = EmulatorGate()
    private let faults: NIOLockedValueBox<EmulatorFaults>
    private let rateWindow = NIOLockedValueBox<(second: Int64, count: Int)>((0, 0))
    /// With a capacity: when the one worker is free again (monotonic seconds, ``CapacityQueue``).
    private let capacityQueue = NIOLockedValueBox(CapacityQueue())
    private let firstRequestSinceFaults = NIOLockedValueBox<Double?>(nil)

    /// An emulator injecting `faults`.
    public init(faults: EmulatorFaults = EmulatorFaults(), keptRequests: Int = 10_000) {
        self.recorder = EmulatorRecorder(keptRequests: keptRequests)
        self.faults = NIOLockedValueBox(faults)
    }

    /// The faults in force.
    public var currentFaults: EmulatorFaults {
        get { faults.withLockedValue { $0 } }
        set {
            faults.withLockedValue { faults in
                faults = newValue
                firstRequestSinceFaults.withLockedValue { $0 = nil }
            }
        }
    }

    /// When the outage of ``EmulatorFaults/unavailableSecondsFromFirstRequest`` started (seconds
    /// since the Unix epoch): the time of the first SDK request since the faults were set, if any.
    public var outageStart: Double? { firstRequestSinceFaults.withLockedValue { $0 } }

    /// The emulator's routes.
    public func router() -> Router<EmulatorContext> {
        let router = Router(context: EmulatorContext.self)
        for platform in [Platform.ios, .android] {
            router.post(RouterPath(CampaignEndpoint.registration(platform))) { request, context in
                try await self.register(request, context, platform: platform)
            }
        }
        router.get(RouterPath(CampaignEndpoint.trackingTest)) { _, _ in Self.text(.ok, "campaign-relay emulator (build 9032)\n") }
        router.get(RouterPath(CampaignEndpoint.tracking)) { request, context in try await self.track(request, context) }
        router.get("r/redirected/{hop}") { request, context in try await self.track(request, context) }
        router.get("emulator/hits") { request, _ in await self.hitsReport(request) }
        router.get("emulator/registrations") { _, _ in
            Self.json(.ok, EmulatorJSON.registrations(await self.recorder.acceptedRegistrations))
        }
        router.get("emulator/requests") { request, _ in
            let limit = request.uri.queryParameters.get("limit").flatMap { Int($0) } ?? 100
            return Self.json(.ok, EmulatorJSON.requests(await self.recorder.lastRequests(max(0, limit))))
        }
        router.get("emulator/faults") { _, _ in Self.json(.ok, EmulatorJSON.encode(self.currentFaults)) }
        router.post("emulator/faults") { request, context in
            let body = try await request.body.collect(upTo: 64 * 1024)
            guard let faults = EmulatorJSON.decodeFaults(Array(buffer: body)) else {
                return Self.text(.badRequest, "faults must be a JSON object with the fields of GET /emulator/faults\n")
            }
            self.currentFaults = faults
            return Self.json(.ok, EmulatorJSON.encode(faults))
        }
        router.post("emulator/reset") { _, _ in
            await self.recorder.reset()
            return Self.text(.ok, "reset\n")
        }
        return router
    }

    /// Runs the emulator on `host`:`port` (over TLS with `certificates`) until the task is
    /// cancelled or a SIGINT/SIGTERM arrives; `onRunning` gets the bound port (useful with port 0).
    public func run(
        host: String, port: Int, certificates: TLSCertificateStore? = nil, logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        let app = Application(
            router: router(),
            server: .http1(tls: certificates),
            configuration: .init(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) },
            logger: logger
        )
        try await app.runService()
    }

    // MARK: SDK endpoints

    /// Applies the faults; returns a response when a fault answers instead of the endpoint.
    private func injectedFault(_ context: EmulatorContext) async throws -> Response? {
        let faults = currentFaults
        if faults.dropRate > 0, Double.random(in: 0..<1) < faults.dropRate {
            try await context.channel.close()
            return Self.text(.internalServerError, "")
        }
        let now = Self.now()
        if let until = faults.unavailableUntil, now < until {
            return retryLater(.serviceUnavailable, faults, now: now)
        }
        let firstRequest = firstRequestSinceFaults.withLockedValue { first in
            if first == nil { first = now }
            return first ?? now
        }
        if let seconds = faults.unavailableSecondsFromFirstRequest, now < firstRequest + seconds {
            return retryLater(.serviceUnavailable, faults, now: now)
        }
        if let limit = faults.rateLimit {
            let second = Int64(now)
            let allowed = rateWindow.withLockedValue { window -> Bool in
                if window.second != second { window = (second, 0) }
                window.count += 1
                return Double(window.count) <= limit
            }
            if !allowed { return retryLater(.tooManyRequests, faults, now: now) }
        }
        if faults.failureRate > 0, Double.random(in: 0..<1) < faults.failureRate {
            return Self.text(HTTPResponse.Status(code: faults.failureStatus ?? 500), "injected failure\n")
        }
        if faults.latencyMilliseconds > 0 { try await Task.sleep(for: .milliseconds(faults.latencyMilliseconds)) }
        if let capacity = faults.capacity, capacity > 0 {
            let places = max(0, faults.queuePlaces ?? CapacityQueue.defaultPlaces)
            let now = ContinuousClock.now
            guard let turn = capacityQueue.withLockedValue({ $0.admit(now: now, serviceTime: .seconds(1 / capacity), places: places) }) else {
                recorder.recordOverloaded()
                return Self.text(.serviceUnavailable, "over capacity: all \(places) places of the queue are taken\n")
            }
            try await Task.sleep(until: turn, clock: .continuous)
        }
        return nil
    }

    private func retryLater(_ status: HTTPResponse.Status, _ faults: EmulatorFaults, now: Double) -> Response {
        var response = Self.text(status, "try again later\n")
        if let seconds = faults.retryAfterSeconds {
            response.headers[.retryAfter] =
                faults.retryAfterAsDate ? HTTPDate.text(secondsSinceEpoch: Int64((now + Double(seconds)).rounded(.up))) : String(seconds)
        }
        return response
    }

    private func register(_ request: Request, _ context: EmulatorContext, platform: Platform) async throws -> Response {
        let body = try await request.body.collect(upTo: 1 << 20)
        let text = String(buffer: body)
        await registrationGate.pass()
        let response = try await answerRegistration(text, platform: platform, context)
        recorder.record(rawRequest(request, body: text, status: Int(response.status.code)))
        return response
    }

    private func answerRegistration(_ body: String, platform: Platform, _ context: EmulatorContext) async throws -> Response {
        if let fault = try await injectedFault(context) { return fault }
        // Campaign reads forms as the relay's SDK endpoints do (a field given twice counts by its
        // first value), and refuses the same unusable ones.
        let form: SDKRegistrationForm
        var fields: [String: String] = [:]
        do {
            form = try SDKRegistrationForm(body: body, platform: platform, time: .now())
            for (name, value) in try FormEncoding.fields(body) where fields[name] == nil { fields[name] = value }
        } catch {
            return Self.text(.badRequest, "\(error)\n")
        }
        let key = form.registration.integrationKey
        if let known = currentFaults.knownIntegrationKeys, !known.contains(key) {
            return Self.text(.badRequest, "Unknown integration key '\(key)' (UnknownUUID)\n")
        }
        if let failing = currentFaults.failingIntegrationKeys, failing.contains(key) {
            return Self.text(.internalServerError, "injected failure for integration key '\(key)'\n")
        }
        fields["platform"] = platform.rawValue
        recorder.record(registration: fields, at: Self.now())
        return Self.text(.ok, "")
    }

    private func track(_ request: Request, _ context: EmulatorContext) async throws -> Response {
        let response = try await answerTracking(request, context)
        recorder.record(rawRequest(request, body: "", status: Int(response.status.code)))
        return response
    }

    private func answerTracking(_ request: Request, _ context: EmulatorContext) async throws -> Response {
        if let fault = try await injectedFault(context) { return fault }
        guard let id = request.uri.queryParameters.get("id") else {
            return Self.text(.badRequest, "expected ?id=\(TrackingHitID.syntax)\n")
        }
        let hit: TrackingHitID
        do {
            hit = try TrackingHitID(parsing: String(id))
        } catch {
            return Self.text(.badRequest, "expected ?id=\(TrackingHitID.syntax) with tag 1 or 2: \(error.message)\n")
        }
        let hop = context.parameters.get("hop").flatMap { Int($0) } ?? 0
        if let redirects = currentFaults.redirectHits, hop < redirects {
            var response = Self.text(.found, "moved\n")
            response.headers[.location] = "/r/redirected/\(hop + 1)/?id=\(id)"
            return response
        }
        recorder.record(EmulatorRecorder.Hit(messageId: hit.messageID, deliveryId: hit.deliveryID, tag: hit.tag.rawValue), at: Self.now())
        return Self.text(.ok, "")
    }

    private func hitsReport(_ request: Request) async -> Response {
        let listMessages = request.uri.queryParameters.get("messages") == "1"
        let listSeconds = request.uri.queryParameters.get("seconds") == "1"
        return Self.json(
            .ok,
            EmulatorJSON.hits(
                accepted: await recorder.acceptedHits, distinct: await recorder.distinctHits, byDelivery: await recorder.countsByDelivery,
                messages: listMessages ? await recorder.hits : nil, requests: await recorder.receivedRequests,
                overloaded: await recorder.overloadedRequests, bySecond: listSeconds ? await recorder.acceptedBySecond : nil
            )
        )
    }

    private func rawRequest(_ request: Request, body: String, status: Int) -> EmulatorRecorder.RawRequest {
        EmulatorRecorder.RawRequest(
            method: request.method.rawValue, uri: request.uri.description,
            headers: [["Host", request.head.authority ?? ""]] + request.headers.map { [$0.name.rawName, $0.value] }, body: body, status: status,
            time: Self.now()
        )
    }

    static func now() -> Double { SystemClock.wallSeconds() }

    static func text(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
