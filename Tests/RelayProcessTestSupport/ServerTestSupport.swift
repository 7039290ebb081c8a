package import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
package import NIOHTTP1
import RelayForwarding
package import RelayLog
package import RelayServer
import Synchronization

/// A relay server running inside the test process on a free loopback port.
package final class RunningServer: Sendable {
    package let port: Int
    package let dataDirectory: String
    private let task: Task<Void, any Error>

    package var url: String { "http://127.0.0.1:\(port)" }

    package static func start(
        fileSystem: any FileSystem = PosixFileSystem(), _ configure: (inout RelayServerConfiguration) -> Void = { _ in }
    ) async throws -> RunningServer {
        var configuration = RelayServerConfiguration()
        configuration.port = 0
        configuration.dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("server-\(UUID().uuidString)").path
        configure(&configuration)
        let server = RelayServer(
            configuration: configuration, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), fileSystem: fileSystem)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task {
            try await server.run { port in
                continuation.yield(port)
                continuation.finish()
            }
        }
        var bound: Int?
        for await port in ports { bound = port }
        guard let port = bound else { throw ServerDidNotStart() }
        return RunningServer(port: port, dataDirectory: configuration.dataDirectory, task: task)
    }

    private init(port: Int, dataDirectory: String, task: Task<Void, any Error>) {
        self.port = port
        self.dataDirectory = dataDirectory
        self.task = task
    }

    package func stop() async {
        task.cancel()
        _ = try? await task.value
    }

    package struct ServerDidNotStart: Error {}
}

/// A small HTTP client for tests (AsyncHTTPClient with keep-alive).
package final class TestHTTPClient: Sendable {
    /// A client with its own connection pool; call ``shutdown()`` when done.
    package init() {}

    package let client: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        // A server that is gone should fail requests at once, not after the default 10 s.
        configuration.timeout = .init(connect: .seconds(1), read: .seconds(30))
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }()

    private let isShutDown = Atomic<Bool>(false)

    /// A test that ends early (a thrown error) must fail as itself, not as AsyncHTTPClient's trap
    /// for a client never shut down; the shutdown goes on in a task, so no thread waits for it.
    deinit {
        if !isShutDown.load(ordering: .relaxed) { Task { [client] in try? await client.shutdown() } }
    }

    package struct Answer: Sendable {
        package var status: Int
        package var body: String
        package var headers: HTTPHeaders
    }

    package func send(_ method: HTTPMethod, _ url: String, body: [UInt8]? = nil, headers: [(String, String)] = []) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await client.execute(request, timeout: .seconds(30))
        let buffer = try await response.body.collect(upTo: 16 << 20)
        return Answer(status: Int(response.status.code), body: String(buffer: buffer), headers: response.headers)
    }

    package func get(_ url: String, headers: [(String, String)] = []) async throws -> Answer {
        try await send(.GET, url, headers: headers)
    }

    package func post(_ url: String, _ body: String, headers: [(String, String)] = []) async throws -> Answer {
        try await send(.POST, url, body: Array(body.utf8), headers: headers)
    }

    package func shutdown() async {
        isShutDown.store(true, ordering: .relaxed)
        try? await client.shutdown()
    }

    /// The sequence number the server's next event gets (1 + `lastDurableSequence` of `/readyz`).
    package func nextSequence(_ server: String) async throws -> Int {
        let answer = try await get(server + "/readyz")
        let object = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
        return (object?["lastDurableSequence"] as? Int).map { $0 + 1 } ?? -1
    }
}

package let androidVectorBody =
    "registrationToken=testToken&mobileAppUuid=testIntegrationKey&userKey=testUser&deviceImei=12345&deviceName=mockDevice&deviceModel=mockDeviceName&deviceBrand=mockDeviceBrand&deviceManufacturer=mockDeviceManufacturer&osName=android&osVersion=mockOSName%20mockOSVersion&osLanguage=mocklocale&additionalParams=%3CadditionalParameters%3E%3Cparam%20name%3D%22key%22%20value%3D%22value%22%2F%3E%3C%2FadditionalParameters%3E"
package let formHeaders = [("Content-Type", "application/x-www-form-urlencoded;charset=UTF-8")]
