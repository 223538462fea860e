import CMallocCounter

/// One timed run: how many operations, how long, how many mallocs.
struct Run {
    var operations: Int
    var seconds: Double
    var mallocs: UInt64
    var perSecond: Double { Double(operations) / seconds }
    var mallocsPerOperation: Double { Double(mallocs) / Double(operations) }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}

/// Runs `body` (which performs `operations` operations) once to warm up, then `repeats`
/// times, and keeps the fastest run: on a shared 2-core machine the slower runs measure
/// the neighbours, not the code.
func measure(operations: Int, repeats: Int = 5, _ body: () -> Void) -> Run {
    body()
    var best: Run?
    let clock = ContinuousClock()
    for _ in 0..<repeats {
        let mallocsBefore = latchkey_malloc_calls()
        let start = clock.now
        body()
        let elapsed = (clock.now - start).seconds
        let run = Run(operations: operations, seconds: elapsed, mallocs: latchkey_malloc_calls() - mallocsBefore)
        if best == nil || run.seconds < best!.seconds { best = run }
    }
    return best!
}

/// Whether the counting malloc is in force (it is when the linker exported it).
func mallocCounterWorks() -> Bool {
    let before = latchkey_malloc_calls()
    var keep: [[Int]] = []
    for i in 0..<100 { keep.append([Int](repeating: i, count: 8 + i)) }
    return latchkey_malloc_calls() - before >= 100 && keep.count == 100
}

/// Keeps a value alive and opaque to the optimiser, so the work that made it is not removed.
@inline(never)
func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }
