import Hummingbird
import RelayCore
import RelayEventJSON
import RelayIO
import RelayPrivacy

/// `POST /v1/privacy/erasures` (erase a person's registrations, see ``PersonalDataErasure``) and
/// `GET /v1/privacy/erasures` (the audit log, ``ErasureAuditLog``), behind the relay's own admin
/// token: an erasure reaches every tenant's data, so no tenant's token opens them.
///
/// On the log in PostgreSQL, an erasure also erases each stream this relay adopted (their reports
/// in ``RelayPrivacy/ErasureReport/adoptedStreams``): the relay that holds a stream's lease is the
/// one whose lanes can mask it.
struct PrivacyRoutes: RouteGroup, Sendable {
    let erasure: PersonalDataErasure
    let adoptions: AdoptedStreams?
    let dataDirectory: String
    let adminToken: String?
    let tenants: TenantDirectory

    /// Where the audit log is read.
    static let auditIO = BlockingExecutor(name: "erasure-audit")

    /// Requests are a few fields: a larger body is not one.
    static let maximumBodyBytes = 16 << 10

    func add(to table: RouteTable) {
        let routes = table.group(AdminAuthentication(token: adminToken, tenants: tenants))
        routes.post("v1/privacy/erasures") { request, _ in
            guard let body = try? await request.body.collect(upTo: Self.maximumBodyBytes) else {
                return Responses.tooLarge(Self.maximumBodyBytes, json: true)
            }
            let parsed: (ErasureSelector, Bool)
            switch ErasureRequest.parse(Array(buffer: body)) {
            case .success(let request): parsed = request
            case .failure(let problem): return Responses.error(.badRequest, problem.message)
            }
            do {
                var report = try await erasure.erase(parsed.0, dryRun: parsed.1)
                if let adoptions {
                    var adopted: [ErasureReport] = []
                    for (stream, streamErasure) in await adoptions.erasures {
                        do {
                            adopted.append(try await streamErasure.erase(parsed.0, dryRun: parsed.1))
                        } catch {
                            let own = parsed.1 ? "looked at (a dry run)" : "erased"
                            return Responses.error(
                                .serviceUnavailable,
                                "this relay's own stream is \(own) (erasure \(report.id)), but the erasure of adopted stream \(stream) failed partway: \(error). What was done stays done; send the erasure again"
                            )
                        }
                    }
                    report.adoptedStreams = adopted
                }
                return Responses.json(.ok, APIJSON.text(report))
            } catch {
                return Responses.error(
                    .serviceUnavailable, "the erasure failed partway: \(error). What was done stays done; the relay finishes it at its next start")
            }
        }
        routes.get("v1/privacy/erasures") { _, _ in
            let directory = dataDirectory
            do {
                let records = try await ErasureAuditLog.records(dataDirectory: directory, on: Self.auditIO)
                return Responses.json(.ok, APIJSON.text(ErasureList(erasures: records)))
            } catch {
                return Responses.error(.internalServerError, "\(error)")
            }
        }
    }
}
