import RelayTestSupport
import TestTiers
import Testing

/// Hang guards inside a test's time limit: a guard that would outlast the limit is cut to what is
/// left of it, less a margin, so the test fails at the wait that was slow, saying what it awaited.
@Suite("Hang guards within the time limit", .timeLimit(.minutes(1)), .tier(.fast))
struct TestBudgetTests {
    @Test("a guard longer than what is left of the time limit is cut to it; a shorter one is kept")
    func guardsAreCut() {
        let cut = TestBudget.seconds(3600)
        #expect(cut <= 60 - TestBudget.margin && cut > 60 - TestBudget.margin - 10, "\(cut)")
        #expect(TestBudget.seconds(5) == 5)
        #expect(TestBudget.note(requested: 3600, granted: cut).contains("cut from 3600.0 s"))
        #expect(TestBudget.note(requested: 5, granted: 5).isEmpty)
    }

}
