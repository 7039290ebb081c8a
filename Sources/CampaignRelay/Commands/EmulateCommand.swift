import ArgumentParser
import CampaignEmulator
import Logging
import RelayCore
import RelayEventJSON
import RelayServer
import RelayTLS

/// `campaign-relay emulate`: an emulator of the Campaign hosts, for tests and staging.
struct EmulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulate",
        abstract: "Run an emulator of the Campaign marketing and tracking hosts (for tests and staging).",
        discussion: """
            Serves POST /nms/mobile/1/registerIOS.jssp and registerAndroid.jssp, GET /r/?id=h…, and \
            GET /r/test, answering 200 and recording what arrives. Inspect with GET /emulator/hits \
            (?messages=1 lists each hit), /emulator/registrations, /emulator/requests?limit=N; change \
            faults at run time with POST /emulator/faults (JSON, as GET /emulator/faults shows); clear \
            with POST /emulator/reset. Stops on SIGINT/SIGTERM.
            """
    )

    @Option(name: .long, help: ArgumentHelp("Address and port to listen on.", valueName: "host:port"))
    var bind: String = "127.0.0.1:9090"

    @Option(name: .long, help: ArgumentHelp("Probability (0-1) of answering --failure-status.", valueName: "p"))
    var failureRate: Double = 0

    @Option(name: .long, help: ArgumentHelp("The status of those random failures.", valueName: "code"))
    var failureStatus: Int = 500

    @Option(name: .long, help: ArgumentHelp("Probability (0-1) of closing the connection without an answer.", valueName: "p"))
    var dropRate: Double = 0

    @Option(name: .long, help: ArgumentHelp("Answer 503 for this many seconds from start.", valueName: "seconds"))
    var unavailableFor: Double?

    @Option(
        name: .long,
        help: ArgumentHelp("Answer 503 for this many seconds from the first SDK request (an outage that waits for its client).", valueName: "seconds")
    )
    var unavailableFromFirstRequest: Double?

    @Option(name: .long, help: ArgumentHelp("Retry-After seconds sent with 503 and 429.", valueName: "seconds"))
    var retryAfter: Int?

    @Flag(name: .long, help: "Send Retry-After as an HTTP-date instead of seconds.")
    var retryAfterDate = false

    @Option(name: .long, help: ArgumentHelp("Answer 429 beyond this many requests per second.", valueName: "n"))
    var rateLimit: Double?

    @Option(name: .long, help: ArgumentHelp("Milliseconds to wait before each answer.", valueName: "ms"))
    var latencyMs: Int = 0

    @Option(
        name: .long,
        help: ArgumentHelp("Accept registrations only for this integration key (repeatable); others get 400 (UnknownUUID).", valueName: "key"))
    var integrationKey: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp("Answer registrations of this integration key 500, every time (a poison request; repeatable).", valueName: "key"))
    var failIntegrationKey: [String] = []

    @Option(
        name: .long, help: ArgumentHelp("Answer each tracking hit with this many 302 redirections before the 200 that records it.", valueName: "n"))
    var redirectHits: Int = 0

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve at most this many SDK requests per second, as a host that falls behind: each waits its turn in a queue (its answer is late by the requests ahead of it), and one that finds the queue full gets 503 at once.",
            valueName: "n/s"))
    var capacity: String?

    @Option(
        name: .long,
        help: ArgumentHelp("With --capacity: places in its queue (requests waiting beyond the one served; Tomcat's acceptCount).", valueName: "m"))
    var queue: Int?

    /// `--capacity`, read: `2000/s` or `2000`.
    private var requestsPerSecond: Double? {
        get throws {
            guard let capacity else { return nil }
            let number = capacity.hasSuffix("/s") ? String(capacity.dropLast(2)) : capacity
            guard let value = Double(number), value.isFinite, value > 0 else {
                throw ValidationError("--capacity \(capacity): give requests per second, as 2000/s or 2000")
            }
            return value
        }
    }

    @OptionGroup(title: "TLS") var tls: TLSOptions

    @Option(name: .long, help: ArgumentHelp("Raw requests kept for /emulator/requests.", valueName: "n"))
    var keptRequests: Int = 10_000

    @Option(name: .long, help: ArgumentHelp("Log level on stderr: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var logLevel: LogLevelOption = .notice

    @Flag(name: .long, help: "Print the address as JSON ({\"url\":…}) and log JSON lines on stderr.")
    var json = false

    @Option(
        name: .long,
        help: ArgumentHelp("Log lines on stderr: text, or json (one object per line; the default with --json).", valueName: "format"))
    var logFormat: LogFormatOption?

    func validate() throws {
        _ = try requestsPerSecond
        if let queue, queue < 0 { throw ValidationError("--queue must not be negative") }
        if queue != nil, capacity == nil { throw ValidationError("--queue is the queue of --capacity: give --capacity too") }
        guard (0...1).contains(failureRate), (0...1).contains(dropRate) else {
            throw ValidationError("--failure-rate and --drop-rate are probabilities from 0 to 1")
        }
        _ = try BindAddress(bind)
        guard redirectHits >= 0, redirectHits <= 10 else { throw ValidationError("--redirect-hits must be 0 to 10") }
        guard (100...599).contains(failureStatus) else { throw ValidationError("--failure-status must be an HTTP status from 100 to 599") }
    }

    func run() async throws {
        let address = try BindAddress(bind)
        var faults = EmulatorFaults()
        faults.failureRate = failureRate
        faults.failureStatus = failureStatus
        faults.dropRate = dropRate
        if let unavailableFor { faults.unavailableUntil = Double(SystemClock.wallSeconds()) + unavailableFor }
        faults.unavailableSecondsFromFirstRequest = unavailableFromFirstRequest
        faults.retryAfterSeconds = retryAfter
        faults.retryAfterAsDate = retryAfterDate
        faults.rateLimit = rateLimit
        faults.latencyMilliseconds = latencyMs
        faults.knownIntegrationKeys = integrationKey.isEmpty ? nil : integrationKey
        faults.failingIntegrationKeys = failIntegrationKey.isEmpty ? nil : failIntegrationKey
        faults.redirectHits = redirectHits > 0 ? redirectHits : nil
        faults.capacity = try requestsPerSecond
        faults.queuePlaces = queue
        let certificates = try tls.files().map { files throws(TLSCertificateStore.Failure) in try TLSCertificateStore(files: files) }
        let logger = CommonOptions.logger("campaign-relay.emulate", level: logLevel, json: LogFormatOption.jsonLines(logFormat, json: json))
        let emulator = CampaignEmulator(faults: faults, keptRequests: keptRequests)
        let scheme = certificates == nil ? "http" : "https"
        try await emulator.run(host: address.host, port: address.port, certificates: certificates, logger: logger) { port in
            var output = StandardOutput.output()
            let url = "\(scheme)://\(address.host.contains(":") ? "[\(address.host)]" : address.host):\(port)"
            output.line(json ? APIJSON.text(["url": url]) : "emulating Campaign hosts on \(url)")
            output.flush()
        }
    }
}
