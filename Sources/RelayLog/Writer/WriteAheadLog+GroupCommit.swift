public import RelayCore

extension WriteAheadLog {
    /// Appends `events` durably and returns their sequence numbers.
    ///
    /// Returns after the fdatasync of the frame holding them. Concurrent calls share frames and
    /// syncs. Events of one call are contiguous and in order.
    ///
    /// - Throws: ``LogError``; when it throws, none of `events` is acknowledged (a later crash may
    ///   or may not keep them, so the caller must treat them as not stored and may resend them).
    public func append(_ events: [Event]) async throws(LogError) -> Range<UInt64> {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Range<UInt64>, LogError>, Never>) in
            admit(PendingAppend(events: events, complete: { continuation.resume(returning: $0) }), wakingFlushLoop: true)
        }
        return try result.get()
    }

    /// Appends `events` durably, as ``append(_:)`` does, and calls `completion` with their
    /// sequence numbers once they are fdatasync'ed, or with why they were not stored: for a caller
    /// that is not a task, such as an event loop answering a request where it read it, so that
    /// neither the call nor its answer goes through the task pool.
    ///
    /// `completion` is called once: on the log's executor after the group commit (or at once,
    /// on the caller's thread, when the log is closing). It must not block; hand the answer to
    /// where it belongs (`eventLoop.execute`).
    public nonisolated func append(_ events: [Event], completion: @escaping @Sendable (Result<Range<UInt64>, LogError>) -> Void) {
        guard submitted.submit(PendingAppend(events: events, complete: completion)) else { return completion(.failure(.closed)) }
        flushLoop.wake()
    }

    /// Queues `append` for the next group commit, or answers it at once: empty, refused because
    /// the log is closing, its tenant's share is full or too many events wait already.
    func admit(_ append: PendingAppend, wakingFlushLoop: Bool) {
        guard !append.events.isEmpty else {
            return append.complete(machine.lifecycle == .open ? .success(nextSequence..<nextSequence) : .failure(.closed))
        }
        if logShares.tallies, let full = logShares.refusal(for: append.events, positions: consumerRegistry.positions, end: nextSequence) {
            statistics.tenantRejections += 1
            return append.complete(.failure(full))
        }
        switch machine.append(events: append.events.count) {
        case .refuseClosed:
            append.complete(.failure(.closed))
        case .refuseOverloaded(let pendingEvents, let limit):
            statistics.overloadRejections += 1
            append.complete(.failure(.overloaded(pendingEvents: pendingEvents, limit: limit)))
        case .enqueue(let wakeFlushLoop):
            committer.enqueue(append)
            if wakeFlushLoop, wakingFlushLoop { flushLoop.wake() }
        }
    }

    /// Commits whatever is queued, group after group, while the writer is home and appends wait
    /// (``LogFlushLoop`` calls it when woken). One store append per group, whatever its size.
    func flushQueued() async {
        while true {
            // What ``append(_:completion:)`` handed in since the last time.
            for append in submitted.take() { admit(append, wakingFlushLoop: false) }
            guard machine.commitDeparts() else { break }
            let (group, appends) = committer.takeGroup(tallyingTenants: logShares.tallies)
            // While a retention pass is choosing, the store drops nothing for room on its own.
            let room = FrameRoom(
                passedBelow: machine.retentionPassUnderWay ? 0 : consumerRegistry.passedFloor, handedOff: retentionPass.takeHandedOff())
            let outcome = await store.append(group, room: room)
            storeExtent = outcome.extent
            let effects = machine.commitReturned()
            reportDrops(outcome.dropped, during: "making room for a commit")
            switch outcome.result {
            case .success(let append):
                let first = group.firstSequence
                committer.committed(appends, durableEnd: append.durableEnd)
                logShares.record(append.tenantBytes, end: append.durableEnd)
                let events = Int(append.durableEnd - first)
                statistics.recordCommit(events: events, bytes: append.bytes, frames: append.frames)
                commitObserver?(
                    CommitReport(events: events, bytes: append.bytes, frames: append.frames, synchronizeDuration: append.synchronizeDuration))
                wakeDurableWaiters()
            case .failure(let error):
                statistics.failedCommits += 1
                logger.error(
                    "group commit failed; nothing in it was acknowledged", metadata: ["error": "\(error)", "events": "\(group.eventCount)"])
                committer.failed(appends, with: error)
                if outcome.extent.durableEnd > committer.nextSequence {
                    // An earlier commit whose answer was lost did land: its events are stored and
                    // read like any other (never acknowledged, so a client may send them again),
                    // and no later commit reuses their numbers.
                    logger.warning(
                        "events of a commit whose answer was lost are stored after all; they are kept, and numbering goes on after them",
                        metadata: ["from": "\(committer.nextSequence)", "to": "\(outcome.extent.durableEnd)"])
                    committer.skip(to: outcome.extent.durableEnd)
                    wakeDurableWaiters()
                }
            }
            // Appends that queued meanwhile are this loop's next round, not a wake-up. A seal waiting
            // is done now that ``nextSequence`` counts this commit, before the next one leaves.
            perform(LogWriterStateMachine.Effects(resumeIdleWaiters: effects.resumeIdleWaiters, sealActiveSegment: effects.sealActiveSegment))
        }
    }
}
