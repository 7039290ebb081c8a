import CampaignProtocol
import Hummingbird
import HummingbirdCore
import Logging
import RelayCore

/// The endpoints of a Campaign marketing and tracking host, so an SDK can point at the relay.
///
/// The SDKs never retry, so these refuse only what is unusable (see ``SDKRegistrationForm``); what
/// they accept leaves for Campaign in the wire form it arrived in.
struct SDKRoutes: RouteGroup, Sendable {
    let ingestor: EventIngestor
    let maximumFormBytes: Int
    let unknownFields: UnknownFormFields
    /// The integration-key rule (`--integration-key`), applied to each registration as it is decoded.
    let admission: EventAdmission

    func add(to routes: RouteTable) {
        let registrations = routes.ingest(ingestor, maximumBodyBytes: maximumFormBytes, json: false)
        for platform in [Platform.ios, .android] {
            registrations.post(CampaignEndpoint.registration(platform)) { request, _ in await register(request, platform: platform) }
        }
        routes.get(CampaignEndpoint.trackingTest) { _, _ in
            Responses.text(.ok, "campaign-relay \(RelayVersion.current) (Campaign redirection server compatible)\n")
        }
        routes.ingest(ingestor, json: false).get(CampaignEndpoint.tracking) { request, _ in await track(request) }
    }

    func register(_ request: Request, platform: Platform) async -> Response {
        // The SDKs always send form data; a body declared as anything else is not a registration.
        if let type = request.mediaType, type != CampaignEndpoint.formMediaType {
            return Responses.text(
                .unsupportedMediaType, "Content-Type \(type) is not form data; send \(CampaignEndpoint.formMediaType) as the SDKs do\n"
            )
        }
        guard let body = await request.collectedBody() else { return Responses.tooLarge(maximumFormBytes, json: false) }
        guard let text = String(validating: body, as: UTF8.self) else { return rejected("the body is not form data: it is not UTF-8") }
        let form: SDKRegistrationForm
        do {
            form = try SDKRegistrationForm(body: text, platform: platform, time: .now())
        } catch {
            return rejected(error.message)
        }
        let event = Event.registration(form.registration)
        if let problem = admission.problems(of: event).first { return rejected(problem.message) }
        if !form.unknownFields.isEmpty { unknownFields.saw(form.unknownFields, platform: platform) }
        return await store(event)
    }

    func track(_ request: Request) async -> Response {
        switch Self.trackingHit(uri: request.uri) {
        case .success(let event): return await store(event)
        case .failure(let rejection): return rejected(rejection.message)
        }
    }

    /// Why a tracking hit is refused (400): the words of the answer.
    struct Rejection: Error {
        let message: String
    }

    /// The event a `GET /r/` asks to store, or why it is refused: one rule for this route and
    /// for ``TrackingHitHandler``, which answers most hits before they reach the router.
    static func trackingHit(uri: URI) -> Result<Event, Rejection> {
        guard let id = uri.queryParameters.get("id") else { return .failure(Rejection(message: "missing ?id=\(TrackingHitID.syntax)")) }
        do {
            return .success(.tracking(try SDKTrackingHit.event(id: String(id), time: .now())))
        } catch {
            return .failure(Rejection(message: error.message))
        }
    }

    private func rejected(_ message: String) -> Response {
        Responses.text(.badRequest, message + "\n")
    }

    private func store(_ event: Event) async -> Response {
        do {
            _ = try await ingestor.append([event])
            return Responses.text(.ok, "")
        } catch {
            switch error {
            case .unavailable(let message, let seconds):
                return Responses.unavailable(message, retryAfterSeconds: seconds, json: false)
            }
        }
    }
}
