import LatchkeyStore
import Testing

/// The benchmark functions work (their figures are for `latchkey-bench`, not asserted).
@Suite struct StoreBenchmarkTests {
    @Test func durableDecisionsMeasuresEachRecord() throws {
        let scratch = ScratchDirectory()
        let figures = try StoreBenchmark.durableDecisions(count: 5, directory: scratch.path)
        #expect(figures.samples == 5)
        #expect(figures.median > .zero && figures.median <= figures.p99)
    }

    @Test func reopenMeasuresEachOpen() throws {
        let scratch = ScratchDirectory()
        let figures = try StoreBenchmark.reopen(logRows: 50, repeats: 3, directory: scratch.path)
        #expect(figures.samples == 3)
        #expect(figures.median <= figures.p99)
    }
}
