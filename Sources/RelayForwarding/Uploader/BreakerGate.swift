/// An actor that sends to one host behind a ``CircuitBreakerStateMachine``: the upload lanes and
/// the relay lane wait for its permission the same way.
protocol BreakerGate: Actor {
    /// The breaker of the host.
    var breaker: CircuitBreakerStateMachine { get set }
}

extension BreakerGate {
    /// Waits until the breaker lets a request through; `false` when cancelled meanwhile.
    func waitForPermission() async -> Bool {
        while !Task.isCancelled {
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
}
