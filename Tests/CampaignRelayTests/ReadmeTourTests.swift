import Foundation
import RelayProcessTestSupport
import RelayTestSupport
import TestTiers
import Testing

/// The README's five-minute tour, run as written: its shell block, taken from the README, in a
/// network namespace of its own (so its fixed ports 8080 and 8081 meet nothing else), with the
/// debug build standing in for the release build its first line asks for.
@Suite("The README's five-minute tour", .serialized, .timeLimit(.minutes(5)), .tier(.fast))
struct ReadmeTourTests {
    /// The first ```sh block after the heading `## A five-minute tour`.
    static func tourBlock() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "\n## A five-minute tour\n"), "README.md has no five-minute tour")
        let rest = readme[section.upperBound...]
        let start = try #require(rest.range(of: "```sh\n"), "the tour has no sh block")
        let end = try #require(rest[start.upperBound...].range(of: "\n```\n"), "the tour's block is not closed")
        return String(rest[start.upperBound..<end.lowerBound])
    }

    @Test("the tour's commands, as written: the emulator gets the registration and both hits byte for byte, and /v1/status shows them delivered")
    func tourAsWritten() async throws {
        let binary = try RelayBinary.path()
        let block = try Self.tourBlock()
        #expect(block.hasPrefix("export PATH=\"$(swift build -c release --show-bin-path):$PATH\""), "\(block.prefix(200))")
        let directory = temporaryDirectory("readme-tour")
        defer { removeTree(directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = "\(directory)/tour.sh"
        // `swift build -c release --show-bin-path` answers the directory of the binary under test;
        // whatever the block leaves running is stopped when the shell exits.
        try """
        swift() { if [ "$*" = "build -c release --show-bin-path" ]; then dirname "\(binary)"; else command swift "$@"; fi; }
        trap 'kill $(jobs -p) 2> /dev/null' EXIT
        set -e
        ip link set lo up
        \(block)
        """.write(toFile: script, atomically: true, encoding: .utf8)
        // Root gets a namespace of its own as is; anyone else through a user namespace.
        let namespace = getuid() == 0 ? ["-n"] : ["-r", "-n"]
        let run = try await BoundedRun.run("/usr/bin/unshare", namespace + ["bash", script], seconds: 120)
        #expect(run.ending == .exited(0), "\(run.ending): \(run.stdout) \(run.stderr.suffix(3000))")

        let objects = Self.jsonObjects(in: run.stdout)
        let accepted = objects.first { $0["accepted"] != nil }
        #expect(accepted?["accepted"] as? Int == 1, "POST /v1/events: \(run.stdout)")
        let received = try #require(objects.first { $0["requests"] != nil }?["requests"] as? [[String: Any]], "\(run.stdout)")
        let requests = received.map { "\($0["method"] ?? "") \($0["uri"] ?? "") \($0["body"] ?? "")" }.sorted()
        #expect(
            requests == [
                "GET /r/?id=h5c4,f0190,2 ", "GET /r/?id=h5c5,f0190,2 ",
                "POST /nms/mobile/1/registerAndroid.jssp registrationToken=fcm-token-1&mobileAppUuid=my-app&userKey=ada@example.com",
            ], "\(requests)")
        let status = try #require(objects.first { $0["destinations"] != nil }, "GET /v1/status: \(run.stdout)")
        let delivered = (status["destinations"] as? [[String: Any]] ?? []).map { "\($0["name"] ?? "") \($0["delivered"] ?? "")" }.sorted()
        #expect(delivered == ["marketing 1", "tracking 2"], "\(delivered)")
        #expect((status["intake"] as? [String: Any])?["lastDurableSequence"] as? Int == 3, "\(status)")
    }

    @Test("the README's Install needs no root, and says how long the first release build takes")
    func installWithoutRoot() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "\n## Install\n"))
        let rest = readme[start.upperBound...]
        let section = rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)]
        #expect(!section.contains("sudo"), "\(section)")
        #expect(section.contains("the first release build, packages fetched included, took "), "\(section)")
        #expect(section.contains("~/.local/bin/campaign-relay"), "\(section)")
    }

    /// The JSON objects printed one after another (curl prints no newline between answers).
    static func jsonObjects(in text: String) -> [[String: Any]] {
        var objects: [[String: Any]] = []
        var depth = 0
        var start: String.Index?
        var inString = false
        var escaped = false
        for index in text.indices {
            let character = text[index]
            if inString {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inString = false }
                continue
            }
            switch character {
            case "\"": inString = true
            case "{":
                if depth == 0 { start = index }
                depth += 1
            case "}":
                depth -= 1
                if depth == 0, let begin = start,
                    let object = try? JSONSerialization.jsonObject(with: Data(text[begin...index].utf8)) as? [String: Any]
                {
                    objects.append(object)
                }
            default: break
            }
        }
        return objects
    }
}
