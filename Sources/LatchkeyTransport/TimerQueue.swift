/// The timers of an event loop: a binary min-heap of `Scheduled` items keyed on
/// (deadline, insertion order), so work due at the same instant runs in the order it was
/// scheduled. Shared by every `EventLoop` implementation (virtual or real time).
public struct TimerQueue {
    private var items: [(key: (Int64, UInt64), item: Scheduled)] = []
    private var sequence: UInt64 = 0

    public init() {}

    public mutating func insert(_ item: Scheduled) {
        sequence += 1
        items.append(((item.deadline.nanoseconds, sequence), item))
        var i = items.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            if items[i].key < items[p].key { items.swapAt(i, p); i = p } else { break }
        }
    }

    /// The earliest live item, after discarding cancelled ones from the top.
    public mutating func first() -> Scheduled? {
        while let top = items.first?.item, top.isCancelled { removeFirst() }
        return items.first?.item
    }

    /// Removes and returns the earliest live item if it is due at `instant`.
    public mutating func popFirst(dueAt instant: Instant) -> Scheduled? {
        guard let top = first(), top.deadline <= instant else { return nil }
        removeFirst()
        return top
    }

    private mutating func removeFirst() {
        guard !items.isEmpty else { return }
        items.swapAt(0, items.count - 1)
        items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < items.count && items[l].key < items[m].key { m = l }
            if r < items.count && items[r].key < items[m].key { m = r }
            if m == i { break }
            items.swapAt(i, m); i = m
        }
    }

    /// Number of items that are still to run.
    public var liveCount: Int { items.reduce(0) { $0 + ($1.item.isPending ? 1 : 0) } }
}
