import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// `docs/openapi.yaml` against tools the project did not write: openapi-spec-validator checks the
/// document, and schemathesis sends generated requests to a real `serve` and checks every answer
/// against it (`.ci/run` installs both from PyPI).
@Suite("The OpenAPI contract", .timeLimit(.minutes(20)), .tier(.thorough))
struct OpenAPITests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let specification = root.appendingPathComponent("docs/openapi.yaml").path
    static let relayToken = "relay-token-0123456789"

    /// Runs `python3 -m module arguments` with `environment` added, within `seconds`.
    static func python(_ module: String, _ arguments: [String], environment: [String: String] = [:], seconds: Double) async throws
        -> BoundedRun
    {
        try await BoundedRun.run(
            "/usr/bin/env", environment.map { "\($0.key)=\($0.value)" } + ["python3", "-m", module] + arguments, seconds: seconds)
    }

    @Test("openapi-spec-validator: docs/openapi.yaml is valid OpenAPI 3.1")
    func specificationIsValid() async throws {
        let run = try await Self.python("openapi_spec_validator", [Self.specification], seconds: 60)
        try #require(
            !run.stderr.contains("No module named"),
            "openapi-spec-validator is needed: python3 -m pip install openapi-spec-validator (.ci/run installs it)")
        #expect(run.ending == .exited(0), "\(run.stdout) \(run.stderr)")
        #expect(run.stdout.contains("docs/openapi.yaml: OK"), "\(run.stdout)")
    }

    @Test(
        "schemathesis against a real serve: no server error, every status documented, every answer matching its schema, over 500 generated cases"
    )
    func schemathesisFindsNothing() async throws {
        let binary = try RelayBinary.path()
        let directory = temporaryDirectory("openapi")
        defer { removeTree(directory) }
        // A tenant, so that the `/{tenant}/…` operations reach their handlers with the spec's example.
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "[tenant.brand-a]\n".write(toFile: "\(directory)/relay.toml", atomically: true, encoding: .utf8)
        let server = try ChildProcess(
            binary,
            [
                "serve", "--config", "\(directory)/relay.toml", "--bind", "127.0.0.1:0", "--data-dir", "\(directory)/data", "--relay-token",
                Self.relayToken,
            ])
        defer { server.stopWithoutWaiting() }
        let port = try await server.await(#"address=127\.0\.0\.1:(\d+)"#)
        let scripts = Self.root.appendingPathComponent("Tests/CampaignRelayTests/Scripts").path
        // The relay token goes with every request, so relay batches are tried past the token check;
        // the admin endpoints have no token here (loopback), and ignore it.
        let run = try await Self.python(
            "schemathesis.cli",
            [
                "run", Self.specification, "--url", "http://127.0.0.1:\(port)", "--checks",
                "not_a_server_error,response_schema_conformance,status_code_conformance", "-H", "Authorization: Bearer \(Self.relayToken)",
                "--max-examples", "50", "--seed", "1", "--no-color",
            ],
            // A budget for the run, not a speed asked of it: 26 operations took some 210 s of its
            // phases on two cores beside the rest of the suite, and took 467 s of a fresh-clone CI
            // run beside a CPU burner.
            environment: ["PYTHONPATH": scripts, "SCHEMATHESIS_HOOKS": "schemathesis_hooks"], seconds: 900)
        try #require(!run.stderr.contains("No module named"), "schemathesis is needed: python3 -m pip install schemathesis (.ci/run installs it)")
        #expect(run.ending == .exited(0), "schemathesis found problems:\n\(run.stdout.suffix(6000))\n\(run.stderr.suffix(2000))")
        let cases = try #require(
            run.stdout.firstMatch(of: /(\d+) generated, (\d+) passed/).map { (Int($0.output.1) ?? 0, Int($0.output.2) ?? 0) }, "\(run.stdout)")
        #expect(cases.0 > 500 && cases.0 == cases.1, "\(cases)")
        #expect(run.stdout.contains("Operations:       29 selected / 29 total"), "\(run.stdout.prefix(1000))")
        #expect(server.process.isRunning, "serve died under schemathesis: \(server.text.suffix(2000))")
        print("schemathesis: \(cases.0) cases generated, \(cases.1) passed, over 29 operations")
    }
}
