import LatchkeyTransport
import LatchkeyStore

/// The store's figures: the time to make one decision durable (commit + fsync of
/// the WAL) and what a restarted lock spends in its store before it can restore, with a full
/// log. On /var/tmp, which the FHS keeps on disk (a tmpfs fsync costs nothing).
func storeRows() {
    print("")
    print("latchkey-bench: the lock's store (SQLite, WAL, synchronous=FULL) in /var/tmp")
    print("")
    row("measure", "figure", "target", nil)
    row(String(repeating: "-", count: 42), String(repeating: "-", count: 12), String(repeating: "-", count: 12), nil)
    do {
        // Steady state: after 3,000 decisions, SQLite has checkpointed and started the WAL over.
        let warm = try StoreBenchmark.durableDecisions(count: 1_000, warmUp: 3_000)
        let median = warm.median.milliseconds
        row("durable decision, median ms (\(warm.samples))", figure(median, decimals: 2), "< 2", median < 2)
        row("durable decision, p99 ms", figure(warm.p99.milliseconds, decimals: 2), "", nil)
        // Cold: the first commits of a new store, into the WAL file it laid out when it opened.
        let cold = try StoreBenchmark.durableDecisions(count: 300)
        row("  first 300 of a new store, median ms", figure(cold.median.milliseconds, decimals: 2), "", nil)
        row("  first 300 of a new store, p99 ms", figure(cold.p99.milliseconds, decimals: 2), "", nil)
        let floor = try StoreBenchmark.syncFloor(count: 500)
        row("  the floor: 4 KiB write + fdatasync, median ms", figure(floor.median.milliseconds, decimals: 2), "", nil)
        row("  the floor, p99 ms", figure(floor.p99.milliseconds, decimals: 2), "", nil)
        let reopen = try StoreBenchmark.reopen(logRows: 10_000)
        row("store open + interrupted(), 10,000 rows, ms", figure(reopen.median.milliseconds, decimals: 2), "", nil)
        row("  same, p99 ms", figure(reopen.p99.milliseconds, decimals: 2), "", nil)
    } catch {
        print("store benchmark failed: \(error)")
    }
}
