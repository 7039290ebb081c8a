import Foundation
import NIOHTTP1
import RelayCore
import RelayProcessTestSupport
import RelayServer
import TestTiers
import Testing

/// `GET /`, where a newcomer starts: HTML for a browser, JSON otherwise, pointing to the status
/// page, the OpenAPI document and the documentation.
@Suite("GET /: the way in", .timeLimit(.minutes(10)), .tier(.fast))
struct IndexRoutesTests {
    static let json =
        #"{"documentation":"README.md and docs/ of the campaign-relay source: docs/campaign-protocol.md (the Campaign wire protocol the SDK endpoints speak), docs/sdk-edge.md (what the SDK endpoints take and forward), docs/configuration.md (every option), docs/metrics.md; campaign-relay help COMMAND on the command line","health":"/healthz","metrics":"/metrics","name":"campaign-relay","openapi":"/openapi.yaml","ready":"/readyz","status":"/status","statusFigures":"/v1/status","version":"\#(RelayVersion.current)"}"#

    @Test("JSON without Accept, with */* or with text/html;q=0; HTML for a browser's Accept, linking /status and /openapi.yaml; 405 for POST")
    func index() async throws {
        let server = try await RunningServer.start { $0.aggregates = false }
        let http = TestHTTPClient()
        for accept in [nil, "*/*", "application/json", "text/html;q=0, application/json"] {
            let answer = try await http.get(server.url + "/", headers: accept.map { [("Accept", $0)] } ?? [])
            #expect(answer.status == 200, "\(accept ?? "no Accept")")
            #expect(answer.headers.first(name: "Content-Type") == "application/json", "\(accept ?? "no Accept")")
            #expect(answer.body == Self.json, "\(accept ?? "no Accept"): \(answer.body)")
        }
        // Chromium's Accept of a page load.
        let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
        let page = try await http.get(server.url + "/", headers: [("Accept", browser)])
        #expect(page.status == 200)
        #expect(page.headers.first(name: "Content-Type") == "text/html; charset=utf-8")
        for link in [#"<a href="/status">/status</a>"#, #"<a href="/openapi.yaml">/openapi.yaml</a>"#, "docs/campaign-protocol.md"] {
            #expect(page.body.contains(link), "\(link) in \(page.body)")
        }
        let post = try await http.send(.POST, server.url + "/", body: [])
        #expect(post.status == 405 && post.headers.first(name: "Allow") == "GET", "\(post.status) \(post.headers)")
        await http.shutdown()
        await server.stop()
    }
}

/// `GET /openapi.yaml` serves docs/openapi.yaml as compiled into the binary
/// (Sources/RelayServer/Index/OpenAPIDocument.swift, written by `.ci/embed-openapi`): the two
/// must be the same bytes, and the document describes both of these routes.
@Suite("GET /openapi.yaml is docs/openapi.yaml, byte for byte", .timeLimit(.minutes(10)), .tier(.fast))
struct OpenAPIDocumentTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("the served document equals the file (run .ci/embed-openapi after changing it); it lists / and /openapi.yaml")
    func servedDocumentIsTheFile() async throws {
        let file = Array(try #require(FileManager.default.contents(atPath: Self.root.appendingPathComponent("docs/openapi.yaml").path)))
        let server = try await RunningServer.start { $0.aggregates = false }
        let http = TestHTTPClient()
        let answer = try await http.get(server.url + "/openapi.yaml")
        await http.shutdown()
        await server.stop()
        #expect(answer.status == 200)
        #expect(answer.headers.first(name: "Content-Type") == "application/yaml")
        let served = Array(answer.body.utf8)
        let differsAt = (0..<min(served.count, file.count)).first { served[$0] != file[$0] } ?? min(served.count, file.count)
        #expect(
            served == file,
            "the binary's document differs from docs/openapi.yaml at byte \(differsAt) (\(served.count) and \(file.count) bytes): run .ci/embed-openapi"
        )
        let text = String(decoding: file, as: UTF8.self)
        #expect(text.contains("\n  /:\n    get:\n"), "docs/openapi.yaml describes GET /")
        #expect(text.contains("\n  /openapi.yaml:\n    get:\n"), "docs/openapi.yaml describes GET /openapi.yaml")
    }
}
