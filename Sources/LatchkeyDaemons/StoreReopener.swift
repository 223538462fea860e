import LatchkeyAgents
import LatchkeyLockAgent
import LatchkeyStore
import LatchkeyTransport

/// A lock started on a store it could open only read-only (`AgentStore.isReadOnly`: the
/// card went read-only) runs degraded and tries read-write again: 1 s after the start,
/// then doubling to 60 s, as the journal's backlog does (a remount is noticed within a
/// minute; a dead card costs one failed open a minute). Once the store is writable the
/// agent is told (`storeBecameWritable`): status clears and what waits is written.
public final class StoreReopener {
    let store: AgentStore
    private weak var agent: LockAgent?
    private let loop: any EventLoop
    private var timer: Scheduled?
    /// Refused attempts so far.
    public private(set) var attempts = 0
    /// The last attempt's error, while the store stays read-only.
    public private(set) var lastError: StoreError?

    static let first: Duration = .seconds(1)
    static let cap: Duration = .seconds(60)

    /// Nil when the store is open read-write: nothing to watch.
    public init?(store: AgentStore?, agent: LockAgent, loop: any EventLoop) {
        guard let store, store.isReadOnly else { return nil }
        self.store = store
        self.agent = agent
        self.loop = loop
        agent.storeIsReadOnly(store.path)
        schedule()
    }

    deinit { timer?.cancel() }

    var delay: Duration {
        var delay = Self.first
        for _ in 0..<min(attempts, 6) { delay = delay * 2 }
        return min(delay, Self.cap)
    }

    private func schedule() {
        timer = loop.schedule(after: delay) { [weak self] in self?.attempt() }
    }

    private func attempt() {
        timer = nil
        do {
            try store.reopenForWriting()
            lastError = nil
            agent?.storeBecameWritable(store.path)
        } catch {
            attempts += 1
            lastError = error
            schedule()
        }
    }
}
