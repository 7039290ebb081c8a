import RelayCore

/// An actor that sends to one host behind a ``CircuitBreakerStateMachine``: the upload lanes and
/// the relay lane wait for its permission the same way.
protocol BreakerGate: Actor {
    /// The breaker of the host.
    var breaker: CircuitBreakerStateMachine { get set }
    /// Whether this relay may forward now (the stream's lease); `nil`: always.
    var forwardingPermit: (any ForwardingPermit)? { get }
    /// The lease's token the lane started under (``ForwardingPermit``).
    var startedTenure: Int64? { get }
}

extension BreakerGate {
    /// Waits until the breaker lets a request through, and the stream's lease (when the log is
    /// kept in PostgreSQL) is held under the tenure the lane started with; `false` when cancelled
    /// meanwhile, or when the lease changed hands (the lane then starts again from its cursor).
    func waitForPermission() async -> Bool {
        while !Task.isCancelled {
            guard await leaseHeld() else { return false }
            switch breaker.permission(now: .now) {
            case .proceed:
                return true
            case .waitUntil(let instant):
                do { try await Task.sleep(until: instant, clock: .continuous) } catch { return false }
            case .waitForProbe:
                do { try await Task.sleep(for: .milliseconds(20)) } catch { return false }
            }
        }
        return false
    }

    /// Whether the lane may go on under the stream's lease: at once without one (the file log) or
    /// while it is held under the tenure the lane started with; waiting while no relay holds it;
    /// `false` when it changed hands or the task was cancelled.
    func leaseHeld() async -> Bool {
        guard let forwardingPermit else { return true }
        while !Task.isCancelled {
            guard let tenure = forwardingPermit.tenure else {
                // Another relay forwards this stream now, or the lease ran out while this one
                // was cut off: wait until it is ours again (a lease round every lease / 3).
                do { try await Task.sleep(for: .milliseconds(100)) } catch { return false }
                continue
            }
            return tenure == startedTenure
        }
        return false
    }
}
