import CampaignEmulator
import RelayCore
import RelayForwarding
import RelayTestSupport
import TestTiers
import Testing

/// Nothing blocks the head of a lane forever, and redirected hits are followed.
@Suite("Poison events and redirections", .serialized, .timeLimit(.minutes(10)), .tier(.fast))
struct PoisonAndRedirectTests {
    @Test("a registration answered 500 forever is tried --max-attempts times and dead-lettered; the others are delivered meanwhile")
    func poisonRegistration() async throws {
        var faults = EmulatorFaults()
        faults.failingIntegrationKeys = ["poison"]
        let running = try await RunningEmulator.start(faults: faults)
        let directory = temporaryDirectory("poison")
        let events =
            [registration(token: "p", key: "poison", time: .now())] + (1...40).map { registration(token: "t\($0)") } + (1...200).map { hit($0) }
        let statistics = try await upload(
            // Ten attempts: nine full-jitter delays of up to 0.5 to 1 s add up to 4.75 s on average
            // and rarely under 2.5 s, longer than the others take even on a loaded machine. The
            // breaker threshold is above ten, or the poison's failures alone would read as an outage.
            events, to: running,
            configuration: UploadConfiguration(
                backoff: Backoff(base: .milliseconds(500), cap: .seconds(1)), breakerThreshold: 20, maximumAttempts: 10),
            directory: directory
        )
        let requests = await running.emulator.recorder.lastRequests(10_000)
        let poison = requests.filter { $0.body.contains("mobileAppUuid=poison") }
        #expect(poison.count == 10, "tried exactly --max-attempts times, got \(poison.count)")
        #expect(poison.allSatisfy { $0.status == 500 })
        #expect(statistics[.marketing]?.delivered == 40)
        #expect(statistics[.marketing]?.deadLettered == 1)
        #expect(statistics[.tracking]?.delivered == 200)
        #expect(await running.emulator.recorder.acceptedRegistrations.count == 40)
        // None of the others waited for it: every other registration was answered before the
        // poison's last attempt (a lane blocked at its head would have sent none of them by then).
        let others = requests.filter { $0.method == "POST" && !$0.body.contains("mobileAppUuid=poison") }
        let lastAttempt = try #require(poison.map(\.time).max())
        let firstAttempt = try #require(poison.map(\.time).min())
        let othersDone = try #require(others.map(\.time).max())
        #expect(othersDone < lastAttempt, "a registration waited behind the poison")
        print(
            "poison registration: first attempt to dead letter \(Int((lastAttempt - firstAttempt) * 1000)) ms; the 40 others done \(Int((othersDone - firstAttempt) * 1000)) ms after its first attempt"
        )
        let letters = try await ForwardingStore(dataDirectory: directory).deadLetters()
        #expect(letters.count == 1)
        #expect(letters.first?.sequence == 1)
        #expect(letters.first?.status == 500)
        #expect(letters.first?.responseBody == "injected failure for integration key 'poison'\n")
        #expect(
            letters.first?.reason.hasPrefix("10 failed attempts (the maximum) while the host answered others") == true,
            "\(letters.first?.reason ?? "")")
        await running.stop()
    }

    @Test("an event older than --max-event-age at a failure is dead-lettered at once")
    func tooOld() async throws {
        var faults = EmulatorFaults()
        faults.failingIntegrationKeys = ["poison"]
        let running = try await RunningEmulator.start(faults: faults)
        let directory = temporaryDirectory("too-old")
        // registration(…) is dated 1970: far older than an hour.
        let statistics = try await upload(
            [registration(token: "p", key: "poison"), registration(token: "ok")], to: running,
            configuration: UploadConfiguration(maximumEventAge: .seconds(3600)), directory: directory
        )
        #expect(statistics[.marketing]?.deadLettered == 1)
        #expect(statistics[.marketing]?.delivered == 1)
        let requests = await running.emulator.recorder.lastRequests(100).filter { $0.body.contains("mobileAppUuid=poison") }
        #expect(requests.count == 1)
        let letters = try await ForwardingStore(dataDirectory: directory).deadLetters()
        #expect(letters.first?.reason.hasPrefix("older than the maximum event age") == true, "\(letters.first?.reason ?? "")")
        await running.stop()
    }

    @Test("registrations of one token keep their order while another token is poisoned")
    func orderPerToken() async throws {
        var faults = EmulatorFaults()
        faults.failingIntegrationKeys = ["poison"]
        let running = try await RunningEmulator.start(faults: faults)
        let events = [registration(token: "p", key: "poison", time: .now())] + (1...20).map { registration(token: "same", userKey: "user\($0)") }
        _ = try await upload(
            events, to: running, configuration: UploadConfiguration(backoff: Backoff(base: .milliseconds(50), cap: .seconds(1)), maximumAttempts: 2))
        let sent = await running.emulator.recorder.acceptedRegistrations
        #expect(sent.map { $0["userKey"] ?? "" } == (1...20).map { "user\($0)" })
        await running.stop()
    }

    @Test("a hit answered 302 then 200 is delivered once; more than 3 redirections go to the dead letters", arguments: [1, 3, 4])
    func redirectedHits(redirects: Int) async throws {
        var faults = EmulatorFaults()
        faults.redirectHits = redirects
        let running = try await RunningEmulator.start(faults: faults)
        let directory = temporaryDirectory("redirect")
        let statistics = try await upload((1...30).map { hit($0) }, to: running, directory: directory)
        let recorder = running.emulator.recorder
        let letters = try await ForwardingStore(dataDirectory: directory).deadLetters()
        if redirects <= 3 {
            #expect(await recorder.acceptedHits == 30)
            #expect(await recorder.distinctHits == 30)
            #expect(statistics[.tracking]?.delivered == 30)
            #expect(letters.isEmpty)
        } else {
            #expect(await recorder.acceptedHits == 0)
            #expect(statistics[.tracking]?.deadLettered == 30)
            #expect(letters.count == 30)
            #expect(letters.allSatisfy { $0.status == 302 })
        }
        await running.stop()
    }
}
