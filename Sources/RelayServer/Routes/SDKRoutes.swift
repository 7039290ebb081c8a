import CampaignProtocol
import CampaignSDKForm
import Hummingbird
import HummingbirdCore
import Logging
import RelayCore

/// The endpoints of a Campaign marketing and tracking host, so an SDK can point at the relay.
///
/// The SDKs never retry, so these refuse only what is unusable (see ``SDKRegistrationForm``); what
/// they accept leaves for Campaign in the wire form it arrived in. Each endpoint is there twice:
/// for the default tenant (`/r/`) and under each tenant's prefix (`/brand-a/r/`), where what is
/// stored belongs to that tenant. Every answer is plain text (README, "The HTTP API").
struct SDKRoutes: RouteGroup, Sendable {
    let ingestor: EventIngestor
    let maximumFormBytes: Int
    let unknownFields: UnknownFormFields
    /// The tenants, each with its integration-key rule, applied to each registration as it is decoded.
    let tenants: TenantDirectory

    func add(to table: RouteTable) {
        // Every error of these routes is a line of text, as Campaign answers: the 404 of an
        // unknown tenant and the 405 of another method too.
        table.answeringInText().addForEachTenant(tenants) { routes, prefix, scope in
            let registrations = routes.ingest(ingestor, maximumBodyBytes: maximumFormBytes, json: false)
            for platform in [Platform.ios, .android] {
                registrations.post(prefix + CampaignEndpoint.registration(platform)) { request, context in
                    await register(request, platform: platform, scope: scope(context))
                }
            }
            routes.get(prefix + CampaignEndpoint.trackingTest) { _, _ in
                Responses.text(.ok, "campaign-relay \(RelayVersion.current) (Campaign redirection server compatible)\n")
            }
            routes.ingest(ingestor, json: false).get(prefix + CampaignEndpoint.tracking) { request, context in
                await track(request, scope: scope(context))
            }
        }
    }

    func register(_ request: Request, platform: Platform, scope: TenantScope) async -> Response {
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
        var event = Event.registration(form.registration)
        if let problem = scope.sdkAdmission.problems(of: event).first { return rejected(problem.message) }
        if !form.unknownFields.isEmpty { unknownFields.saw(form.unknownFields, platform: platform) }
        scope.claim(&event)
        return await store(event)
    }

    func track(_ request: Request, scope: TenantScope) async -> Response {
        switch Self.trackingHit(uri: request.uri, scope: scope) {
        case .success(let event): return await store(event)
        case .failure(let rejection): return rejected(rejection.message)
        }
    }

    /// Why a tracking hit is refused (400): the words of the answer.
    struct Rejection: Error {
        let message: String
    }

    /// The event a `GET /r/` of `scope` asks to store, or why it is refused: one rule for this
    /// route and for ``TrackingHitHandler``, which answers most hits before they reach the router.
    static func trackingHit(uri: URI, scope: TenantScope) -> Result<Event, Rejection> {
        guard let id = uri.queryParameters.get("id") else { return .failure(Rejection(message: "missing ?id=\(TrackingHitID.syntax)")) }
        do {
            var event = Event.tracking(try SDKTrackingHit.event(id: String(id), time: .now()))
            scope.claim(&event)
            return .success(event)
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
