public import Testing

extension Trait where Self == ConditionTrait {
    /// Puts a suite in `tier`: it runs only when the run selected that tier (``TestTier/selected(environment:)``),
    /// and is otherwise reported as skipped with the command that runs it.
    ///
    /// Name it once per suite, in the `@Suite` attribute of the outermost type; never on a `@Test`
    /// or a nested suite (`TestTierRuleTests` checks both).
    public static func tier(_ tier: TestTier, sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        .enabled(Comment(rawValue: tier.howToRun), sourceLocation: sourceLocation) { try TestTier.selected().contains(tier) }
    }
}
