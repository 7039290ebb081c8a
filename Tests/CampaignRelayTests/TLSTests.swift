import Foundation
import RelayProcessTestSupport
import Synchronization
import TestTiers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// TLS on the listener, checked with clients the relay did not write (Python's `ssl`, curl), and
/// forwarding to an `https` host trusted through `--ca-file`.
@Suite("TLS on the listener and upstream", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct TLSTests {
    /// A test CA, two server certificates (CN relay-a and relay-b, for 127.0.0.1) and a client
    /// certificate, made with openssl.
    static func makeCertificates() async throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = """
            set -e
            cd '\(directory)'
            openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca
            printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > server.ext
            for name in a b; do
              openssl req -newkey rsa:2048 -nodes -keyout $name.key -out $name.csr -subj /CN=relay-$name
              openssl x509 -req -in $name.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $name.pem -days 2 -extfile server.ext
            done
            openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=edge-relay
            openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 2
            cp a.pem current.pem
            cp a.key current.key
            """
        let outcome = try await RelayBinary.run("/bin/sh", ["-c", script])
        try #require(outcome.status == 0, "openssl failed: \(outcome.stderr)")
        return directory
    }

    static func script(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scripts/\(name)").path
    }

    static func temporaryDataDirectory(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)").path
    }

    @Test(
        "Python's ssl reaches /healthz, a registration and a hit over TLS 1.3 and 1.2; plain HTTP gets no 200; SIGHUP serves a new certificate without failing a request under way; the uploader trusts --ca-file"
    )
    func listenerAndReload() async throws {
        let binary = try RelayBinary.path()
        let certificates = try await Self.makeCertificates()
        let emulator = try ChildProcess(
            binary, ["emulate", "--bind", "127.0.0.1:0", "--tls-cert", "\(certificates)/b.pem", "--tls-key", "\(certificates)/b.key"])
        defer { emulator.stopWithoutWaiting() }
        let emulatorPort = try await emulator.await(#"https://127\.0\.0\.1:(\d+)"#)
        let relay = try ChildProcess(
            binary,
            [
                "serve", "--bind", "127.0.0.1:0", "--data-dir", Self.temporaryDataDirectory("tls-serve"), "--tls-cert", "\(certificates)/current.pem",
                "--tls-key", "\(certificates)/current.key", "--tracking-host", "https://127.0.0.1:\(emulatorPort)",
                "--marketing-host", "https://127.0.0.1:\(emulatorPort)", "--ca-file", "\(certificates)/ca.pem",
            ]
        )
        defer { relay.stopWithoutWaiting() }
        let port = try await relay.await(#"address=127\.0\.0\.1:(\d+) scheme=https"#)

        let outcome = try await RelayBinary.run(
            "/usr/bin/env",
            [
                "python3", Self.script("tls_client.py"), port, "\(certificates)/ca.pem", "\(relay.process.processIdentifier)",
                "\(certificates)/current.pem", "\(certificates)/current.key", "\(certificates)/b.pem", "\(certificates)/b.key",
            ]
        )
        try #require(outcome.status == 0, "the Python client failed: \(outcome.stderr)")
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any], "\(outcome.stdout)")
        #expect(seen["healthz"] as? Int == 200)
        #expect(seen["registration"] as? Int == 200)
        #expect(seen["hit"] as? Int == 200)
        #expect(seen["version"] as? String == "TLSv1.3")
        #expect(seen["tls12"] as? Int == 200)
        #expect(!((seen["plain"] as? String) ?? "").contains("200"), "plain HTTP on the TLS port: \(seen["plain"] ?? "")")
        #expect(seen["before"] as? String == "relay-a")
        #expect(seen["after"] as? String == "relay-b", "SIGHUP must serve the new certificate to new connections")
        #expect(seen["acrossReload"] as? String == "HTTP/1.1 200 OK", "a request under way across the reload must finish")
        #expect(relay.text.contains("reloaded the TLS certificate (SIGHUP)"))

        // curl, trusting only the test CA, and the uploader's --ca-file: the hit and the
        // registration reach the https emulator.
        let curl = try await RelayBinary.run("/usr/bin/curl", ["-s", "--cacert", "\(certificates)/ca.pem", "https://127.0.0.1:\(port)/r/test"])
        #expect(curl.status == 0 && curl.stdout.contains("campaign-relay"), "\(curl.stderr)")
        var delivered = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            delivered = try await RelayBinary.run(
                "/usr/bin/curl", ["-s", "--cacert", "\(certificates)/ca.pem", "https://127.0.0.1:\(emulatorPort)/emulator/requests"]
            ).stdout
            if delivered.contains("h05,tls,1"), delivered.contains("tls-token"), delivered.contains("h7,tls,2") { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(delivered.contains("?id=h05,tls,1"), "\(delivered)")
        #expect(delivered.contains("registrationToken=tls-token&mobileAppUuid=key&userKey=u"))
        #expect(delivered.contains("?id=h7,tls,2"), "the request finished across the reload was stored and forwarded")
    }

    @Test("--tls-client-ca: a client without a certificate from the CA is refused, one with it is served")
    func clientCertificates() async throws {
        let binary = try RelayBinary.path()
        let certificates = try await Self.makeCertificates()
        let relay = try ChildProcess(
            binary,
            [
                "serve", "--bind", "127.0.0.1:0", "--data-dir", Self.temporaryDataDirectory("mtls-serve"), "--tls-cert", "\(certificates)/a.pem",
                "--tls-key", "\(certificates)/a.key", "--tls-client-ca", "\(certificates)/ca.pem",
            ]
        )
        defer { relay.stopWithoutWaiting() }
        let port = try await relay.await(#"address=127\.0\.0\.1:(\d+) scheme=https"#)
        let outcome = try await RelayBinary.run(
            "/usr/bin/env",
            ["python3", Self.script("mtls_client.py"), port, "\(certificates)/ca.pem", "\(certificates)/client.pem", "\(certificates)/client.key"]
        )
        try #require(outcome.status == 0, "the Python client failed: \(outcome.stderr)")
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [String: Any], "\(outcome.stdout)")
        #expect(seen["with"] as? Int == 200)
        #expect(seen["without"] as? Int == nil, "a client without a certificate must not be served: \(seen["without"] ?? "")")
    }

    @Test(
        "relay chain over mutual TLS: an edge without a client certificate gets nothing in; with --upstream-client-cert its log arrives, once"
    )
    func relayChainWithClientCertificates() async throws {
        let binary = try RelayBinary.path()
        let certificates = try await Self.makeCertificates()
        let token = "relay-token-0123456789"
        let centralDirectory = Self.temporaryDataDirectory("mtls-central")
        let edgeDirectory = Self.temporaryDataDirectory("mtls-edge")
        defer {
            for directory in [centralDirectory, edgeDirectory, certificates] { try? FileManager.default.removeItem(atPath: directory) }
        }
        let central = try ChildProcess(
            binary,
            [
                "serve", "--bind", "127.0.0.1:0", "--data-dir", centralDirectory, "--tls-cert", "\(certificates)/a.pem", "--tls-key",
                "\(certificates)/a.key", "--tls-client-ca", "\(certificates)/ca.pem", "--relay-token", token,
            ]
        )
        defer { central.stopWithoutWaiting() }
        let port = try await central.await(#"address=127\.0\.0\.1:(\d+) scheme=https"#)
        var lines = ""
        for id in 1...250 { lines += #"{"kind":"track","action":"open","messageId":"\#(id)","deliveryId":"mtls"}"# + "\n" }
        let ingest = try await RelayBinary.run(binary, ["ingest", "-", "--data-dir", edgeDirectory, "--json"], input: Data(lines.utf8))
        try #require(ingest.status == 0, "\(ingest.stderr)")
        let handOn = [
            "upload", "--data-dir", edgeDirectory, "--upstream-relay", "https://127.0.0.1:\(port)", "--upstream-token", token, "--ca-file",
            "\(certificates)/ca.pem", "--until-drained", "--json",
        ]

        // Without a certificate the handshake fails: the edge keeps its events and says why.
        let refused = try ChildProcess(binary, handOn)
        _ = try await refused.await(#"(the host requires a client certificate: give --upstream-client-cert)"#)
        await refused.stop()
        #expect(refused.process.terminationStatus == 1, "not drained: \(refused.text)")
        #expect(refused.text.contains("stopped before the log was drained (backlog 250)"), "\(refused.text)")

        // The same with curl, a client this project did not write: no certificate, no answer.
        let curl = try await RelayBinary.run(
            "/usr/bin/curl",
            [
                "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", "\(certificates)/ca.pem", "-X", "POST", "-H",
                "Authorization: Bearer \(token)",
                "https://127.0.0.1:\(port)/v1/relay/batches",
            ])
        #expect(curl.stdout == "000", "curl without a certificate got an HTTP answer: \(curl.stdout)")
        let curlWithCertificate = try await RelayBinary.run(
            "/usr/bin/curl",
            [
                "-s", "-w", "\n%{http_code}", "--cacert", "\(certificates)/ca.pem", "--cert", "\(certificates)/client.pem", "--key",
                "\(certificates)/client.key", "-X", "POST", "-H", "Authorization: Bearer \(token)", "https://127.0.0.1:\(port)/v1/relay/batches",
            ])
        #expect(
            curlWithCertificate.stdout.hasSuffix("\n400"),
            "a request without relay headers is refused by the relay itself: \(curlWithCertificate.stdout)")

        let accepted = try await RelayBinary.run(
            binary, handOn + ["--upstream-client-cert", "\(certificates)/client.pem", "--upstream-client-key", "\(certificates)/client.key"],
            seconds: 60)
        #expect(accepted.status == 0, "\(accepted.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(accepted.stdout.utf8)) as? [String: Any], "\(accepted.stdout)")
        #expect(summary["delivered"] as? Int == 250, "\(accepted.stdout)")
        await central.stop()
        let dump = try await RelayBinary.run(binary, ["wal", "dump", "--data-dir", centralDirectory])
        let stored = dump.stdout.split(separator: "\n")
        #expect(stored.count == 250, "each event once at the central relay")
        #expect(stored.allSatisfy { $0.contains(#""relayOrigin""#) })

        let half = try await RelayBinary.run(binary, handOn + ["--upstream-client-cert", "\(certificates)/client.pem"])
        #expect(half.status == 64)
        #expect(half.stderr.contains("--upstream-client-cert needs --upstream-client-key"), "\(half.stderr)")
    }

    /// A second CA in `directory` (beside ``makeCertificates()``'s), `ca2.pem`, and a server
    /// certificate it signed for 127.0.0.1, `other.pem` and `other.key`.
    static func makeSecondAuthority(in directory: String) async throws {
        let script = """
            set -e
            cd '\(directory)'
            openssl req -x509 -newkey rsa:2048 -nodes -keyout ca2.key -out ca2.pem -days 2 -subj /CN=test-ca-2
            openssl req -newkey rsa:2048 -nodes -keyout other.key -out other.csr -subj /CN=campaign-other
            openssl x509 -req -in other.csr -CA ca2.pem -CAkey ca2.key -CAcreateserial -out other.pem -days 2 -extfile server.ext
            """
        let outcome = try await RelayBinary.run("/bin/sh", ["-c", script])
        try #require(outcome.status == 0, "openssl failed: \(outcome.stderr)")
    }

    @Test(
        "a tenant's ca-file is what its hosts are checked against: brand-a (ca-file CA2, host of CA2) and brand-b (no ca-file, the relay's CA1, host of CA1) are delivered; brand-c (no ca-file, host of CA2) is not, and says why"
    )
    func tenantCAFile() async throws {
        let binary = try RelayBinary.path()
        let certificates = try await Self.makeCertificates()
        try await Self.makeSecondAuthority(in: certificates)
        let directory = Self.temporaryDataDirectory("tls-tenant-ca")
        defer {
            for path in [directory, certificates] { try? FileManager.default.removeItem(atPath: path) }
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // One https Campaign host per tenant: brand-a's and brand-c's certificates from CA2, brand-b's from CA1.
        var hosts: [String: (child: ChildProcess, port: String, ca: String)] = [:]
        for (tenant, certificate, ca) in [("brand-a", "other", "ca2"), ("brand-b", "b", "ca"), ("brand-c", "other", "ca2")] {
            let emulator = try ChildProcess(
                binary,
                [
                    "emulate", "--bind", "127.0.0.1:0", "--tls-cert", "\(certificates)/\(certificate).pem", "--tls-key",
                    "\(certificates)/\(certificate).key",
                ])
            hosts[tenant] = (emulator, try await emulator.await(#"https://127\.0\.0\.1:(\d+)"#), "\(certificates)/\(ca).pem")
        }
        defer { for host in hosts.values { host.child.stopWithoutWaiting() } }
        func url(_ tenant: String) -> String { "https://127.0.0.1:\(hosts[tenant]?.port ?? "")" }
        let adminToken = "tls-admin-token-0123456789"
        let config = "\(directory)/relay.toml"
        try """
        data-dir = "\(directory)/data"
        ca-file = "\(certificates)/ca.pem"
        backoff-base = 5
        backoff-cap = 0.2

        [serve]
        admin-token = "\(adminToken)"

        [tenant.brand-a]
        tracking-host = "\(url("brand-a"))"
        ca-file = "\(certificates)/ca2.pem"

        [tenant.brand-b]
        tracking-host = "\(url("brand-b"))"

        [tenant.brand-c]
        tracking-host = "\(url("brand-c"))"
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let relay = try ChildProcess(binary, ["serve", "--config", config, "--bind", "127.0.0.1:0"])
        defer { relay.stopWithoutWaiting() }
        let relayURL = "http://127.0.0.1:\(try await relay.await(#"address=127\.0\.0\.1:(\d+)"#))"
        let http = TestHTTPClient()
        for (tenant, id) in [("brand-a", "a1"), ("brand-b", "b1"), ("brand-c", "c1")] {
            let answer = try await http.get(relayURL + "/\(tenant)/r/?id=h\(id),tls-\(tenant),1")
            #expect(answer.status == 200, "\(tenant): \(answer.status) \(answer.body)")
        }

        /// The requests a host received, read with curl trusting that host's CA.
        func received(_ tenant: String) async throws -> String {
            guard let host = hosts[tenant] else { return "" }
            return try await RelayBinary.run("/usr/bin/curl", ["-s", "--cacert", host.ca, url(tenant) + "/emulator/requests"]).stdout
        }
        /// brand-c's destination as `GET /brand-c/v1/status` shows it.
        func brandCDestination() async throws -> [String: Any]? {
            let status = try await http.get(relayURL + "/brand-c/v1/status", headers: [("Authorization", "Bearer \(adminToken)")])
            let object = try JSONSerialization.jsonObject(with: Data(status.body.utf8)) as? [String: Any]
            return (object?["destinations"] as? [[String: Any]])?.first { $0["tenant"] as? String == "brand-c" }
        }
        // Until brand-a's and brand-b's hits arrived and brand-c's failure shows (a hang guard only).
        let expected = ["brand-a": "?id=ha1,tls-brand-a,1", "brand-b": "?id=hb1,tls-brand-b,1"]
        var seen: [String: String] = [:]
        func delivered(_ tenant: String) -> Bool { seen[tenant]?.contains(expected[tenant] ?? "?") == true }
        var brandC: [String: Any]?
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            for tenant in expected.keys.sorted() where !delivered(tenant) { seen[tenant] = try await received(tenant) }
            brandC = try await brandCDestination()
            if delivered("brand-a"), delivered("brand-b"), brandC?["lastError"] is String { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(delivered("brand-a"), "brand-a's host, trusted through its ca-file: \(seen["brand-a"] ?? "")")
        #expect(delivered("brand-b"), "brand-b's host, trusted through the relay's ca-file: \(seen["brand-b"] ?? "")")
        let lastError = brandC?["lastError"] as? String ?? ""
        #expect(lastError.lowercased().contains("certificate"), "brand-c's host is trusted by no CA it has: \(brandC ?? [:])")
        #expect(brandC?["backlog"] as? Int == 1, "brand-c's hit waits: \(brandC ?? [:])")
        #expect(!(try await received("brand-c")).contains("tls-brand-c"), "brand-c's host got nothing")
        print("tenant ca-file: brand-c's last error: \(lastError)")
        await http.shutdown()
        await relay.stop()
    }

    @Test("unusable TLS files stop the start with a message naming the file")
    func badFiles() async throws {
        let binary = try RelayBinary.path()
        let certificates = try await Self.makeCertificates()
        let missing = try await RelayBinary.run(
            binary,
            [
                "serve", "--bind", "127.0.0.1:0", "--data-dir", Self.temporaryDataDirectory("tls-bad"), "--tls-cert", "/nonexistent.pem", "--tls-key",
                "\(certificates)/a.key",
            ]
        )
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("--tls-cert /nonexistent.pem: cannot read a PEM certificate chain"), "\(missing.stderr)")
        let mismatched = try await RelayBinary.run(
            binary,
            [
                "serve", "--bind", "127.0.0.1:0", "--data-dir", Self.temporaryDataDirectory("tls-bad"), "--tls-cert", "\(certificates)/a.pem",
                "--tls-key", "\(certificates)/b.key",
            ]
        )
        #expect(mismatched.status != 0)
        #expect(mismatched.stderr.contains("check that the key belongs to the certificate"), "\(mismatched.stderr)")
        let alone = try await RelayBinary.run(binary, ["serve", "--tls-cert", "\(certificates)/a.pem"])
        #expect(alone.status == 64)
        #expect(alone.stderr.contains("--tls-cert needs --tls-key"))
    }
}
