import Foundation

/// What the frames written over many seeds showed: no (salt, first sequence) pair, which fixes
/// the AES-GCM key and nonce of a frame, may seal two different frames.
public struct SealedFrameTally: CustomStringConvertible, Sendable {
    /// Seeds counted.
    public var seeds = 0
    /// Of those, the seeds whose crash landed inside the work.
    public var crashesDuringWork = 0
    /// Frames seen in writes to segment files.
    public var framesWritten = 0
    /// Of those, frames not encrypted.
    public var framesInTheClear = 0
    /// (salt, first sequence) pairs used for two different frames: nonce reuse.
    public var reusedNonces: [String] = []
    /// Same (salt, first sequence) written again with the same bytes (a write retried as it was).
    public var identicalRewrites = 0
    /// First sequence numbers sealed under two salts or more (within one seed).
    public var sequencesUnderSeveralSalts = 0
    /// Of those, sealed by two writer sessions (before and after a crash, or after a reopen).
    public var sequencesRewrittenAcrossSessions = 0
    /// Of those, sealed twice by one session (a commit that failed, then the next).
    public var sequencesRewrittenWithinASession = 0
    /// Every salt seen.
    public var salts = Set<[UInt8]>()
    /// What each (salt, first sequence) sealed, over every seed of the shard: salts are random,
    /// so one from another seed must not collide either.
    var sealed: [NonceKey: [UInt8]] = [:]

    /// Nothing counted yet.
    public init() {}

    /// Counts the frames one seed wrote.
    public mutating func add(_ frames: [WrittenFrame], seed: UInt64, crashedDuringWork: Bool) {
        seeds += 1
        if crashedDuringWork { crashesDuringWork += 1 }
        var saltsBySequence: [UInt64: Set<[UInt8]>] = [:]
        var sessionsBySequence: [UInt64: [[UInt8]: Set<Int>]] = [:]
        for frame in frames {
            framesWritten += 1
            guard let salt = frame.salt, let ciphertext = frame.ciphertext, let tag = frame.tag, frame.keyID != nil else {
                framesInTheClear += 1
                continue
            }
            salts.insert(salt)
            let first = frame.header.firstSequence
            let key = NonceKey(salt: salt, firstSequence: first)
            // What the key and nonce protect: the header's authenticated bytes, the ciphertext and the tag.
            let sealedBytes = frame.authenticated + ciphertext + tag
            if let earlier = sealed[key] {
                if earlier == sealedBytes {
                    identicalRewrites += 1
                } else {
                    reusedNonces.append("seed \(seed): first sequence \(first) sealed twice under salt \(hex(salt))")
                }
            } else {
                sealed[key] = sealedBytes
            }
            saltsBySequence[first, default: []].insert(salt)
            sessionsBySequence[first, default: [:]][salt, default: []].insert(frame.session)
        }
        for (first, several) in saltsBySequence where several.count > 1 {
            sequencesUnderSeveralSalts += 1
            let sessions = sessionsBySequence[first, default: [:]].values.reduce(into: Set<Int>()) { $0.formUnion($1) }
            if sessions.count > 1 { sequencesRewrittenAcrossSessions += 1 } else { sequencesRewrittenWithinASession += 1 }
        }
    }

    public var description: String {
        "\(seeds) seeds (\(crashesDuringWork) crashed during the work), \(framesWritten) frames written, \(salts.count) salts; "
            + "first sequences sealed under several salts \(sequencesUnderSeveralSalts) (across sessions \(sequencesRewrittenAcrossSessions), "
            + "within one \(sequencesRewrittenWithinASession)); identical rewrites \(identicalRewrites); nonces reused \(reusedNonces.count); "
            + "frames in the clear \(framesInTheClear)"
    }

    /// What fixes a frame's key and nonce under one key of the ring.
    struct NonceKey: Hashable, Sendable {
        var salt: [UInt8]
        var firstSequence: UInt64
    }
}

private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
