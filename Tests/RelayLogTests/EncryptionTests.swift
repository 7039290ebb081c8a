import Foundation
import RelayCore
import RelayTestSupport
import Synchronization
import TestTiers
import Testing

@testable import RelayLog

#if canImport(Glibc)
    import Glibc
#endif

/// Encryption at rest of the log's frames: the key file, sealing and opening through the log and
/// its readers, key rotation, missing and wrong keys, tampering, and the salt a writer draws again
/// after a failed commit.
@Suite("Encryption at rest", .tier(.fast))
struct EncryptionTests {
    // MARK: Key file

    @Test("a key file with comments and blank lines gives its keys in order, the last one newest; each broken line is named by number")
    func keyFileParsing() throws {
        let first = encryptionTestKey(1)
        let second = encryptionTestKey(2)
        let text = """
            # keys of the relay's log, newest last

            k1:\(base64(first))
               # an indented comment, then a key without padding and a comment after it
            2026-07:\(base64(second).replacingOccurrences(of: "=", with: ""))   # newest

            """
        let ring = try LogKeyFile.parse(text, path: "keys.txt")
        #expect(ring.ids == ["k1", "2026-07"])
        #expect(ring.newest.id == "2026-07")
        #expect(ring.source == "keys.txt")
        // Equal rings hold the same ids with the same bytes, in the same order.
        #expect(ring == LogKeyRing(keys: [LogKeyRing.Key(id: "k1", bytes: first), LogKeyRing.Key(id: "2026-07", bytes: second)]))
        #expect(ring != LogKeyRing(keys: [LogKeyRing.Key(id: "k1", bytes: first), LogKeyRing.Key(id: "2026-07", bytes: first)]))
        #expect(ring.description == "keys k1, 2026-07 (newest 2026-07) from keys.txt")
        // A file written on Windows (a byte-order mark, CR LF line ends) reads the same, lines counted alike.
        let windows = "\u{FEFF}# keys\r\nk1:\(base64(first))\r\n\r\n2026-07:\(base64(second))\r\n"
        #expect(try LogKeyFile.parse(windows, path: "keys.txt") == ring)
        #expect(throws: LogKeyFileError(path: "keys.txt", line: 3, problem: "is not ID:BASE64 (no ':')")) {
            try LogKeyFile.parse("\u{FEFF}k1:\(base64(first))\r\n\r\nk2\r\n", path: "keys.txt")
        }
        // An id of exactly 32 characters is the longest allowed.
        let longest = String(repeating: "a", count: 32)
        #expect(try LogKeyFile.parse("\(longest):\(base64(first))", path: "keys.txt").ids == [longest])

        let key = base64(first)
        let idRule = "1 to 32 letters, digits or '-'"
        let cases: [(text: String, error: LogKeyFileError)] = [
            (
                "# c\nk1:\(key)\nk_2:\(key)\n",
                LogKeyFileError(path: "keys.txt", line: 3, problem: "has the key id 'k_2', which is not \(idRule)")
            ),
            (
                "\n\(String(repeating: "b", count: 33)):\(key)\n",
                LogKeyFileError(path: "keys.txt", line: 2, problem: "has the key id '\(String(repeating: "b", count: 33))', which is not \(idRule)")
            ),
            ("k1:\(key)\n\nk2 \(key)\n", LogKeyFileError(path: "keys.txt", line: 3, problem: "is not ID:BASE64 (no ':')")),
            (
                "k1:\(base64(Array(first.prefix(31))))",
                LogKeyFileError(
                    path: "keys.txt", line: 1, problem: "key k1 decodes to 31 bytes, not 32 (make one with: head -c 32 /dev/urandom | base64)")
            ),
            ("# one\n# two\nk1:!!not*base64!!\n", LogKeyFileError(path: "keys.txt", line: 3, problem: "key k1 is not base64")),
            ("k1:\(key)\n# again\nk1:\(base64(second))\n", LogKeyFileError(path: "keys.txt", line: 3, problem: "repeats the key id k1")),
            ("", LogKeyFileError(path: "keys.txt", line: nil, problem: "holds no key (one ID:BASE64 line per key, newest last)")),
            ("# only a comment\n\n", LogKeyFileError(path: "keys.txt", line: nil, problem: "holds no key (one ID:BASE64 line per key, newest last)")),
        ]
        for (text, expected) in cases {
            let error = try #require(throws: LogKeyFileError.self, "\(text)") { try LogKeyFile.parse(text, path: "keys.txt") }
            #expect(error == expected, "\(text)")
        }
        #expect(
            LogKeyFileError(path: "keys.txt", line: 3, problem: "repeats the key id k1").description
                == "encryption key file keys.txt, line 3, repeats the key id k1")
    }

    @Test("loading a key file refuses one its group or others may read (0644) and takes one of 0600 or 0400")
    func keyFilePermissions() throws {
        let directory = temporaryDirectory("key-file")
        defer { removeTree(directory) }
        let path = "\(directory)/keys"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("k1:\(base64(encryptionTestKey(1)))\n".utf8)))

        #expect(chmod(path, 0o644) == 0)
        let refused = try #require(throws: LogKeyFileError.self) { try LogKeyFile.load(path: path) }
        #expect(
            refused
                == LogKeyFileError(
                    path: path, line: nil,
                    problem: "is open to its group or others (mode 644): run chmod 600 \(path), as ssh requires of a private key"))
        #expect(chmod(path, 0o640) == 0)
        #expect(throws: LogKeyFileError.self) { try LogKeyFile.load(path: path) }

        #expect(chmod(path, 0o600) == 0)
        let ring = try LogKeyFile.load(path: path)
        #expect(ring.ids == ["k1"])
        #expect(ring.source == path)
        #expect(ring == encryptionTestRing(("k1", 1)))
        #expect(chmod(path, 0o400) == 0)
        #expect(try LogKeyFile.load(path: path).ids == ["k1"])

        let missing = try #require(throws: LogKeyFileError.self) { try LogKeyFile.load(path: "\(directory)/absent") }
        #expect(missing == LogKeyFileError(path: "\(directory)/absent", line: nil, problem: "cannot be read (No such file or directory)"))
    }

    // MARK: Round trip

    /// Canaries of personal data: they must not be found in the bytes of an encrypted log.
    static let tokenCanary = "CANARY-push-token-5f1d9e0a7c3b"
    static let userKeyCanary = "canary.user.key.8b2e@example.com"

    /// Events of every shape: tracking hits of every action (``TestEvents``), every shape the binary
    /// codec's tests cover (registrations, keyed requests, copies, relayed events), and a
    /// registration carrying the canaries.
    static func everyShape() throws -> [Event] {
        var events = TrackingAction.allCases.enumerated().map { index, action in
            TestEvents.tracking(Int64(index + 1), delivery: "delivery-\(index)", action: action)
        }
        events += try EventBinaryCodecTests.events()
        events.append(
            .registration(
                Registration(
                    platform: .android, integrationKey: "canary-app", registrationToken: tokenCanary, userKey: userKeyCanary,
                    deviceName: "canary device", time: EventTime(nanosecondsSinceEpoch: 1_795_255_200_000_000_000, fractionDigits: 3))))
        return events
    }

    @Test(
        "events of every shape go through an encrypted log on disk and back, by the log's reader and a reader of its own; the file holds none of their text",
        arguments: [Int32(0), 6])
    func roundTripOnDisk(compressionLevel: Int32) async throws {
        let events = try Self.everyShape()
        let thirds = [0, events.count / 3, 2 * events.count / 3, events.count]
        // First in the clear, which shows that the canaries would be found; then encrypted.
        for encryption in [nil, encryptionTestRing(("k1", 1))] {
            let directory = temporaryDirectory("encrypted-round-trip")
            defer { removeTree(directory) }
            var configuration = LogConfiguration(segmentBytes: 1 << 20, compressionLevel: compressionLevel)
            configuration.encryption = encryption
            var log = try await WriteAheadLog.open(dataDirectory: directory, configuration: configuration, logger: quietLogger)
            for part in 0..<3 {
                let range = try await log.append(Array(events[thirds[part]..<thirds[part + 1]]))
                #expect(range == UInt64(thirds[part] + 1)..<UInt64(thirds[part + 1] + 1))
            }
            await log.close()

            log = try await WriteAheadLog.open(dataDirectory: directory, configuration: configuration, logger: quietLogger)
            let durable = await log.durableSequence
            #expect(durable == UInt64(events.count + 1))
            var shared = log.reader(from: 1)
            let viaLog = try readToEnd(&shared, below: durable)
            #expect(try log.firstEvent(from: 1, below: durable)?.event == events[0])
            await log.close()
            var own = LogReader(walDirectory: "\(directory)/wal", from: 1, keys: encryption)
            let standalone = try readToEnd(&own)
            #expect(viaLog.map(\.sequence) == Array(1...UInt64(events.count)))
            #expect(viaLog.map(\.event) == events)
            #expect(standalone == viaLog)

            let walDirectory = "\(directory)/wal"
            let names = try PosixFileSystem().listDirectory(walDirectory).filter { $0.hasSuffix(".wal") }.sorted()
            #expect(names == ["00000000000000000001.wal"])
            let bytes = try PosixFileSystem().readFile("\(walDirectory)/00000000000000000001.wal")
            let frames = parseFrames(bytes, from: SegmentHeader.size)
            #expect(frames.map(\.header.firstSequence) == thirds.dropLast().map { UInt64($0 + 1) })
            #expect(frames.map(\.header.isEncrypted) == [Bool](repeating: encryption != nil, count: 3))
            #expect(frames.map(\.keyID) == [String?](repeating: encryption == nil ? nil : "k1", count: 3))
            #expect(frames.map(\.header.codec) == [FrameHeader.Codec](repeating: compressionLevel == 0 ? .stored : .zlib, count: 3))
            if encryption != nil {
                // One writer, one salt: every frame of the session has it.
                #expect(Set(frames.compactMap(\.salt)).count == 1)
                for canary in [Self.tokenCanary, Self.userKeyCanary, "canary device", "canary-app", "delivery-1"] {
                    #expect(!bytes.contains(utf8: canary), "\(canary) is in the encrypted segment (compression level \(compressionLevel))")
                }
            } else if compressionLevel == 0 {
                // The check can fail: stored in the clear, the text is there.
                for canary in [Self.tokenCanary, Self.userKeyCanary, "canary device", "canary-app", "delivery-1"] {
                    #expect(bytes.contains(utf8: canary), "\(canary) should be in the segment written in the clear")
                }
            }
        }
    }

    // MARK: Rotation, missing and wrong keys

    /// A log of 15 events in one segment: ids 1 to 5 in the clear, 6 to 10 under ring [k1], 11 to
    /// 15 under ring [k1, k2]; each part two appends of 3 and 2 events, so two frames.
    static func mixedLog() async throws -> SimulatedFileSystem {
        let fileSystem = SimulatedFileSystem()
        for (part, encryption) in [nil, encryptionTestRing(("k1", 1)), encryptionTestRing(("k1", 1), ("k2", 2))].enumerated() {
            var configuration = LogConfiguration(segmentBytes: 64 << 10)
            configuration.encryption = encryption
            let log = try await WriteAheadLog.open(dataDirectory: "/mixed", configuration: configuration, fileSystem: fileSystem, logger: quietLogger)
            let base = Int64(part * 5)
            #expect(try await log.append((1...3).map { TestEvents.tracking(base + $0) }) == UInt64(base + 1)..<UInt64(base + 4))
            #expect(try await log.append((4...5).map { TestEvents.tracking(base + $0) }) == UInt64(base + 4)..<UInt64(base + 6))
            await log.close()
        }
        return fileSystem
    }

    static let mixedSegment = "00000000000000000001.wal"

    @Test(
        "a log in the clear, then under [k1], then under [k1, k2] reads back whole with both keys; verify counts frames per key with or without them")
    func rotationAndMixedLog() async throws {
        let fileSystem = try await Self.mixedLog()
        #expect(try fileSystem.listDirectory("/mixed/wal").filter { $0.hasSuffix(".wal") } == [Self.mixedSegment])
        let frames = parseFrames(try #require(fileSystem.contents("/mixed/wal/\(Self.mixedSegment)")), from: SegmentHeader.size)
        #expect(frames.map(\.header.firstSequence) == [1, 4, 6, 9, 11, 14])
        #expect(frames.map(\.keyID) == [nil, nil, "k1", "k1", "k2", "k2"])
        // A salt per writer: the k1 writer's two frames share one, the k2 writer's another.
        #expect(frames[2].salt == frames[3].salt)
        #expect(frames[4].salt == frames[5].salt)
        #expect(frames[2].salt != frames[4].salt)

        var reader = LogReader(walDirectory: "/mixed/wal", fileSystem: fileSystem, from: 1, keys: encryptionTestRing(("k1", 1), ("k2", 2)))
        let events = try readToEnd(&reader)
        #expect(events.map(\.sequence) == Array(1...15))
        #expect(events.compactMap { TestEvents.id(of: $0.event) } == Array(1...15))
        #expect(events.map(\.event) == (1...15).map { TestEvents.tracking($0) })

        let opened = try LogVerifier.verify(walDirectory: "/mixed/wal", fileSystem: fileSystem, keys: encryptionTestRing(("k1", 1), ("k2", 2)))
        #expect(opened.framesByKeyID == ["k1": 2, "k2": 2])
        #expect(opened.encryptedFrames == 4)
        #expect(opened.unopenedFrames == 0)
        #expect(opened.frames == 6)
        #expect(opened.events == 15)
        #expect(opened.firstSequence == 1)
        #expect(opened.lastSequence == 15)
        #expect(opened.isClean)
        #expect(opened.damage.isEmpty)

        let unopened = try LogVerifier.verify(walDirectory: "/mixed/wal", fileSystem: fileSystem)
        #expect(unopened.encryptedFrames == 4)
        #expect(unopened.unopenedFrames == unopened.encryptedFrames)
        #expect(unopened.framesByKeyID == ["k1": 2, "k2": 2])
        #expect(unopened.frames == 6)
        #expect(unopened.events == 15)
        #expect(unopened.lastSequence == 15)
        #expect(unopened.isClean)
        #expect(unopened.damage.isEmpty)
    }

    @Test("a reader without the key of a frame stops before it with keyMissing, naming the key, the segment and the offset, and skips nothing")
    func missingKey() async throws {
        let fileSystem = try await Self.mixedLog()
        let frames = parseFrames(try #require(fileSystem.contents("/mixed/wal/\(Self.mixedSegment)")), from: SegmentHeader.size)
        let firstK1 = try #require(frames.first { $0.keyID == "k1" })
        #expect(firstK1.header.firstSequence == 6)
        let offset = Int64(firstK1.offset)

        for (keys, available) in [(encryptionTestRing(("k2", 2)), ["k2"]), (nil, [])] as [(LogKeyRing?, [String])] {
            let expected = LogError.unreadableFrame(.keyMissing(keyID: "k1", available: available), segment: Self.mixedSegment, offset: offset)
            var reader = LogReader(walDirectory: "/mixed/wal", fileSystem: fileSystem, from: 1, keys: keys)
            // The events in the clear come first (a read that stops at the unreadable frame's
            // boundary returns them).
            let clear = try reader.read(maximumEvents: 5)
            #expect(clear.events.map(\.sequence) == [1, 2, 3, 4, 5])
            #expect(clear.position == 6)
            for _ in 0..<2 {
                let error = try #require(throws: LogError.self) { try reader.read(maximumEvents: 100) }
                #expect(error == expected)
                // Nothing skipped: the reader stays before the frame it cannot open.
                #expect(reader.position == 6)
            }
            if keys == nil {
                #expect(
                    describe(expected)
                        == "cannot read the frame of segment \(Self.mixedSegment) at offset \(offset): it is encrypted with key k1, and no --encryption-key-file was given: give the key file that holds k1; nothing was changed"
                )
            } else {
                #expect(
                    describe(expected)
                        == "cannot read the frame of segment \(Self.mixedSegment) at offset \(offset): it is encrypted with key k1, which the key file does not hold (it holds k2): add k1 to the key file, or give the file that holds it; nothing was changed"
                )
            }
            // A reader starting on the frame stops there as well; one starting past the k1 frames
            // reads the k2 ones (with k2).
            var atFrame = LogReader(walDirectory: "/mixed/wal", fileSystem: fileSystem, from: 7, keys: keys)
            #expect(throws: expected) { try atFrame.read(maximumEvents: 100) }
            #expect(atFrame.position == 7)
            if keys != nil {
                var pastK1 = LogReader(walDirectory: "/mixed/wal", fileSystem: fileSystem, from: 11, keys: keys)
                #expect(try readToEnd(&pastK1).map(\.sequence) == Array(11...15))
                // wal verify with keys lacking one fails the same way.
                #expect(throws: expected) { try LogVerifier.verify(walDirectory: "/mixed/wal", fileSystem: fileSystem, keys: keys) }
            }
        }

        // A log whose segments start with an encrypted frame is not opened without its key.
        let encrypted = SimulatedFileSystem()
        var configuration = LogConfiguration(segmentBytes: 64 << 10)
        configuration.encryption = encryptionTestRing(("k1", 1))
        let log = try await WriteAheadLog.open(dataDirectory: "/sealed", configuration: configuration, fileSystem: encrypted, logger: quietLogger)
        _ = try await log.append((1...3).map { TestEvents.tracking($0) })
        await log.close()
        for (keys, available) in [(encryptionTestRing(("k2", 2)), ["k2"]), (nil, [])] as [(LogKeyRing?, [String])] {
            configuration.encryption = keys
            await #expect(throws: LogError.unreadableFrame(.keyMissing(keyID: "k1", available: available), segment: Self.mixedSegment, offset: 32)) {
                let refused = try await WriteAheadLog.open(
                    dataDirectory: "/sealed", configuration: configuration, fileSystem: encrypted, logger: quietLogger)
                await refused.close()
            }
        }
    }

    @Test("a key of the right id but other bytes does not open the frame: notAuthentic, and the log does not open with it")
    func wrongKey() async throws {
        let fileSystem = try await Self.mixedLog()
        let frames = parseFrames(try #require(fileSystem.contents("/mixed/wal/\(Self.mixedSegment)")), from: SegmentHeader.size)
        let offset = Int64(try #require(frames.first { $0.keyID == "k1" }).offset)
        let wrong = encryptionTestRing(("k1", 99), ("k2", 2))
        let expected = LogError.unreadableFrame(.notAuthentic(keyID: "k1"), segment: Self.mixedSegment, offset: offset)
        var reader = LogReader(walDirectory: "/mixed/wal", fileSystem: fileSystem, from: 6, keys: wrong)
        for _ in 0..<2 {
            #expect(throws: expected) { try reader.read(maximumEvents: 100) }
            #expect(reader.position == 6)
        }
        #expect(throws: expected) { try LogVerifier.verify(walDirectory: "/mixed/wal", fileSystem: fileSystem, keys: wrong) }
        #expect(
            describe(expected)
                == "cannot read the frame of segment \(Self.mixedSegment) at offset \(offset): it does not authenticate under the key file's key k1: that key is not the one that sealed it (check the key file), or the frame was altered; nothing was changed"
        )

        let encrypted = SimulatedFileSystem()
        var configuration = LogConfiguration(segmentBytes: 64 << 10)
        configuration.encryption = encryptionTestRing(("k1", 1))
        let log = try await WriteAheadLog.open(dataDirectory: "/sealed", configuration: configuration, fileSystem: encrypted, logger: quietLogger)
        _ = try await log.append((1...3).map { TestEvents.tracking($0) })
        await log.close()
        configuration.encryption = encryptionTestRing(("k1", 99))
        await #expect(throws: LogError.unreadableFrame(.notAuthentic(keyID: "k1"), segment: Self.mixedSegment, offset: 32)) {
            let refused = try await WriteAheadLog.open(
                dataDirectory: "/sealed", configuration: configuration, fileSystem: encrypted, logger: quietLogger)
            await refused.close()
        }
    }

    // MARK: Tampering

    /// How a test alters the second frame of a sealed segment (its CRCs are fixed up after).
    enum Tampering: String, CaseIterable, CustomTestStringConvertible {
        case ciphertextByte, tagByte, keyIDByte, firstSequence, eventCount, codec
        var testDescription: String { rawValue }
    }

    @Test("a frame altered and its CRCs made to match again does not authenticate", arguments: Tampering.allCases)
    func tampering(_ tampering: Tampering) async throws {
        let fileSystem = SimulatedFileSystem()
        var configuration = LogConfiguration(segmentBytes: 64 << 10, compressionLevel: 0)
        configuration.encryption = encryptionTestRing(("k1", 1), ("k2", 2))
        let log = try await WriteAheadLog.open(dataDirectory: "/t", configuration: configuration, fileSystem: fileSystem, logger: quietLogger)
        #expect(try await log.append((1...3).map { TestEvents.tracking($0) }) == 1..<4)
        #expect(try await log.append((4...6).map { TestEvents.tracking($0) }) == 4..<7)
        await log.close()
        let path = "/t/wal/00000000000000000001.wal"
        var bytes = try #require(fileSystem.contents(path))
        let frames = parseFrames(bytes, from: SegmentHeader.size)
        #expect(frames.map(\.header.firstSequence) == [1, 4])
        let frame = frames[1]
        let start = frame.offset
        let payload = start + FrameHeader.size
        // The envelope: key id length 1, "k2", 16 bytes of salt, then the ciphertext.
        #expect(bytes[payload] == 2)
        switch tampering {
        case .ciphertextByte: bytes[payload + 1 + 2 + FrameEnvelope.saltSize] ^= 0x01
        case .tagByte: bytes[start + frame.header.frameSize - 1] ^= 0x80
        // "k2" becomes "k3": no such key.
        case .keyIDByte: bytes[payload + 2] = UInt8(ascii: "3")
        case .firstSequence: bytes[start + 8] = 5
        case .eventCount: bytes[start + 16] = 2
        case .codec: bytes[start + 5] = FrameHeader.Codec.zlib.rawValue
        }
        // Payload CRC over the stored payload at 28, then the header CRC over bytes 0..<32 at 32.
        let stored = Array(bytes[payload..<(start + frame.header.frameSize)])
        bytes.replaceSubrange((start + 28)..<(start + 32), with: littleEndian(Zlib.crc32(stored)))
        bytes.replaceSubrange((start + 32)..<(start + 36), with: littleEndian(Zlib.crc32(Array(bytes[start..<(start + 32)]))))
        try fileSystem.open(path, create: false).write(bytes, at: 0)

        // The CRCs hold: without keys, verify finds two sound frames.
        let unopened = try LogVerifier.verify(walDirectory: "/t/wal", fileSystem: fileSystem)
        #expect(unopened.isClean)
        #expect(unopened.frames == 2)
        #expect(unopened.unopenedFrames == 2)

        let failure: FrameEncryptionError = tampering == .keyIDByte ? .keyMissing(keyID: "k3", available: ["k1", "k2"]) : .notAuthentic(keyID: "k2")
        let expected = LogError.unreadableFrame(failure, segment: "00000000000000000001.wal", offset: Int64(start))
        var reader = LogReader(walDirectory: "/t/wal", fileSystem: fileSystem, from: 1, keys: configuration.encryption)
        #expect(try reader.read(maximumEvents: 3).events.compactMap { TestEvents.id(of: $0.event) } == [1, 2, 3])
        #expect(throws: expected) { try reader.read(maximumEvents: 100) }
        #expect(reader.position == 4)
        #expect(throws: expected) { try LogVerifier.verify(walDirectory: "/t/wal", fileSystem: fileSystem, keys: configuration.encryption) }
    }

    // MARK: Salt renewal

    @Test("after an fdatasync failure the writer seals under a new salt: the frame rewritten at the failed frame's first sequence has another salt")
    func saltRenewedAfterAFailedCommit() async throws {
        let directory = temporaryDirectory("salt-renewal")
        defer { removeTree(directory) }
        let failing = FailingFileSystem()
        let recorder = FrameWriteRecorder()
        let fileSystem = RecordingFileSystem(base: failing, recorder: recorder)
        var configuration = LogConfiguration(segmentBytes: 64 << 10)
        configuration.encryption = encryptionTestRing(("k1", 1))
        let log = try await WriteAheadLog.open(dataDirectory: directory, configuration: configuration, fileSystem: fileSystem, logger: quietLogger)
        #expect(try await log.append((1...3).map { TestEvents.tracking($0) }) == 1..<4)
        failing.fail(.synchronizeData, errno: EIO)
        await #expect {
            try await log.append((4...6).map { TestEvents.tracking($0) })
        } throws: { error in
            guard case LogError.syncFailed = error else { return false }
            return true
        }
        failing.heal()
        #expect(try await log.append([TestEvents.tracking(99)]) == 4..<5)
        #expect(try await log.append((7...8).map { TestEvents.tracking($0) }) == 5..<7)
        await log.close()

        // Every frame written, in order: 1 (salt A), the failed 4 (salt A), 4 again and 5 (salt B).
        let written = recorder.frames
        #expect(written.map(\.header.firstSequence) == [1, 4, 4, 5])
        #expect(written.map(\.keyID) == ["k1", "k1", "k1", "k1"])
        let failed = written[1]
        let rewritten = written[2]
        #expect(failed.salt == written[0].salt, "no failure between the first two commits: one salt")
        #expect(rewritten.salt != failed.salt, "the frame sealed again at sequence 4 must have another salt")
        #expect(written[3].salt == rewritten.salt)

        // The files: the failed frame was cut from the first segment; the second starts at 4 with the new salt.
        let walDirectory = "\(directory)/wal"
        let names = try PosixFileSystem().listDirectory(walDirectory).filter { $0.hasSuffix(".wal") }.sorted()
        #expect(names == ["00000000000000000001.wal", "00000000000000000004.wal"])
        let onDisk = try names.map { name in parseFrames(try PosixFileSystem().readFile("\(walDirectory)/\(name)"), from: SegmentHeader.size) }
        #expect(onDisk.map { $0.map(\.header.firstSequence) } == [[1], [4, 5]])
        #expect(onDisk[0][0].salt == failed.salt)
        #expect(onDisk[1].map(\.salt) == [rewritten.salt, rewritten.salt])
        #expect(onDisk[1][0].ciphertext == rewritten.ciphertext)

        var reader = LogReader(walDirectory: walDirectory, from: 1, keys: configuration.encryption)
        let events = try readToEnd(&reader)
        #expect(events.map(\.sequence) == Array(1...6))
        #expect(events.compactMap { TestEvents.id(of: $0.event) } == [1, 2, 3, 99, 7, 8])
    }

    @Test(
        "a failed commit whose frame stays on disk (superseded) and its rewrite in the next segment have the same first sequence and different salts")
    func supersededFrameHasAnotherSalt() async throws {
        let fileSystem = SimulatedFileSystem()
        var configuration = LogConfiguration(segmentBytes: 64 << 10)
        configuration.encryption = encryptionTestRing(("k1", 1))
        let log = try await WriteAheadLog.open(dataDirectory: "/s", configuration: configuration, fileSystem: fileSystem, logger: quietLogger)
        #expect(try await log.append((1...3).map { TestEvents.tracking($0) }) == 1..<4)
        // The sync fails, and so do the truncation and the fresh descriptor's sync that would cut
        // the frame back: the unacknowledged frame stays in the first segment.
        fileSystem.fail(.synchronizeData, errno: EIO, times: 2)
        fileSystem.fail(.truncate, errno: EIO, times: 1)
        await #expect(throws: LogError.self) { try await log.append((4...6).map { TestEvents.tracking($0) }) }
        #expect(try await log.append([TestEvents.tracking(99)]) == 4..<5)
        await log.close()

        let first = parseFrames(try #require(fileSystem.contents("/s/wal/00000000000000000001.wal")), from: SegmentHeader.size)
        let second = parseFrames(try #require(fileSystem.contents("/s/wal/00000000000000000004.wal")), from: SegmentHeader.size)
        #expect(first.map(\.header.firstSequence) == [1, 4])
        #expect(second.map(\.header.firstSequence) == [4])
        #expect(first[0].salt == first[1].salt)
        #expect(second[0].salt != first[1].salt, "sequence 4 sealed twice under one salt would reuse a nonce")
        #expect(second[0].keyID == "k1")

        var reader = LogReader(walDirectory: "/s/wal", fileSystem: fileSystem, from: 1, keys: configuration.encryption)
        var events: [SequencedEvent] = []
        var damage: [LogDamage] = []
        while true {
            let batch = try reader.read(maximumEvents: 100)
            damage += batch.damage
            if batch.events.isEmpty { break }
            events += batch.events
        }
        #expect(events.compactMap { TestEvents.id(of: $0.event) } == [1, 2, 3, 99])
        #expect(damage.map(\.kind) == [.superseded])
    }

    // MARK: Rekey

    @Test(
        "wal rekey seals each segment it rewrites under a salt of its own: one salt per segment, all distinct, none of the writer's, every frame under the newest key"
    )
    func rekeyDrawsASaltPerSegment() async throws {
        let directory = temporaryDirectory("rekey-salts")
        defer { removeTree(directory) }
        let walDirectory = "\(directory)/wal"
        var configuration = LogConfiguration(segmentBytes: 4096, compressionLevel: 0)
        configuration.encryption = encryptionTestRing(("k1", 1))
        let log = try await WriteAheadLog.open(dataDirectory: directory, configuration: configuration, logger: quietLogger)
        // 200 commits of 5 uncompressed events: many frames in each 4 KiB segment, several segments.
        for commit in 0..<200 { _ = try await log.append((1...5).map { TestEvents.tracking(Int64(commit * 5 + $0)) }) }
        await log.close()

        func frames() throws -> [String: [RawFrame]] {
            let names = try PosixFileSystem().listDirectory(walDirectory).filter { $0.hasSuffix(".wal") }
            return try Dictionary(
                uniqueKeysWithValues: names.map {
                    ($0, parseFrames(try PosixFileSystem().readFile("\(walDirectory)/\($0)"), from: SegmentHeader.size))
                })
        }
        let written = try frames()
        try #require(written.count >= 4, "the log must have at least 4 segments, not \(written.count)")
        try #require(written.values.allSatisfy { $0.count >= 2 }, "each segment must hold several frames")
        let writerSalts = Set(written.values.joined().compactMap(\.salt))
        #expect(written.values.joined().allSatisfy { $0.keyID == "k1" })

        let ring = encryptionTestRing(("k1", 1), ("k2", 2))
        let report = try LogRekey.rekey(directory: walDirectory, walDirectory: walDirectory, keys: ring, leaving: .none)
        #expect(report.segmentsRewritten == written.count)

        let rekeyed = try frames()
        #expect(rekeyed.keys.sorted() == written.keys.sorted())
        var saltOfSegment: [String: [UInt8]] = [:]
        for (name, segmentFrames) in rekeyed.sorted(by: { $0.key < $1.key }) {
            #expect(segmentFrames.count == written[name]?.count, "\(name): every frame rewritten")
            #expect(segmentFrames.allSatisfy { $0.keyID == "k2" }, "\(name): every frame sealed with the newest key")
            let salts = Set(segmentFrames.map { $0.salt ?? [] })
            #expect(salts.count == 1, "\(name): one salt for the segment, not \(salts.count)")
            saltOfSegment[name] = salts.first
        }
        #expect(Set(saltOfSegment.values).count == rekeyed.count, "a salt of its own for each of the \(rekeyed.count) segments rewritten")
        #expect(writerSalts.isDisjoint(with: saltOfSegment.values), "no rewritten segment reuses the writer's salt")

        var reader = LogReader(walDirectory: walDirectory, from: 1, keys: ring)
        #expect(try readToEnd(&reader).compactMap { TestEvents.id(of: $0.event) } == Array(Int64(1)...1000))
    }

    // MARK: Known issue

    @Test("a read that meets an unreadable frame after readable ones in the same call returns them or keeps its position before them")
    func readableEventsBeforeAnUnreadableFrame() async throws {
        let fileSystem = try await Self.mixedLog()
        var reader = LogReader(walDirectory: "/mixed/wal", fileSystem: fileSystem, from: 1, keys: nil)
        var returned: [UInt64] = []
        var failure: LogError?
        for _ in 0..<3 {
            do {
                returned += try reader.read(maximumEvents: 100).events.map(\.sequence)
            } catch {
                failure = error
                break
            }
        }
        guard case .unreadableFrame(.keyMissing(keyID: "k1", available: []), _, _) = try #require(failure) else {
            Issue.record("expected keyMissing k1, got \(String(describing: failure))")
            return
        }
        // Every sequence the reader's position has passed was handed to the caller: the batch before the frame.
        #expect(returned == Array(1...5))
        #expect(reader.position == UInt64(returned.count) + 1, "position \(reader.position), events returned \(returned)")
    }

    @Test("a log holding encrypted frames is not opened without a key file, even when its segment begins with frames in the clear")
    func mixedLogOpenedWithoutKeys() async throws {
        // Encryption switched on for a log written in the clear: its one segment begins in the clear.
        let fileSystem = try await Self.mixedLog()
        let before = parseFrames(try #require(fileSystem.contents("/mixed/wal/\(Self.mixedSegment)")), from: SegmentHeader.size)
        let firstK1 = Int64(try #require(before.first { $0.keyID == "k1" }).offset)
        var opened: WriteAheadLog?
        var refusal: LogError?
        do {
            opened = try await WriteAheadLog.open(
                dataDirectory: "/mixed", configuration: LogConfiguration(segmentBytes: 64 << 10), fileSystem: fileSystem, logger: quietLogger)
        } catch {
            refusal = error
        }
        if let opened {
            // What the log would then do: frames in the clear after the encrypted ones.
            Issue.record("a log whose newest segment holds encrypted frames opened without a key file")
            await opened.close()
        }
        #expect(
            refusal == .unreadableFrame(.keyMissing(keyID: "k1", available: []), segment: Self.mixedSegment, offset: firstK1),
            "\(String(describing: refusal))")
        let after = parseFrames(try #require(fileSystem.contents("/mixed/wal/\(Self.mixedSegment)")), from: SegmentHeader.size)
        #expect(after == before, "the refused opening changed nothing")
    }
}

// MARK: Helpers shared with EncryptedCrashSimulationTests

/// 32 key bytes made from `seed` (different seeds, different keys).
func encryptionTestKey(_ seed: UInt8) -> [UInt8] {
    (0..<32).map { UInt8(truncatingIfNeeded: Int(seed) &* 37 &+ $0 &* 11 &+ 5) }
}

/// A ring of keys `(id, seed)`, the last one newest.
func encryptionTestRing(_ keys: (String, UInt8)...) -> LogKeyRing {
    LogKeyRing(keys: keys.map { LogKeyRing.Key(id: $0.0, bytes: encryptionTestKey($0.1)) })
}

private func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

private func littleEndian(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

/// A log error's description.
private func describe(_ error: LogError) -> String { error.description }

/// Every event `reader` returns until the end of the log (or `limit`).
func readToEnd(_ reader: inout some FrameReader, below limit: UInt64 = .max) throws -> [SequencedEvent] {
    var events: [SequencedEvent] = []
    while true {
        let batch = try reader.read(maximumEvents: 1000, below: limit)
        if batch.events.isEmpty { break }
        events += batch.events
    }
    reader.close()
    return events
}
