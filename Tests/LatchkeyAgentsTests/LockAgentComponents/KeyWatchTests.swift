@testable import LatchkeyLockAgent
import LatchkeySim
import Testing

/// The key watch when the daemon reports changes to the key store's files: it looks at a
/// change, not every second, and once more a second later for a commit not yet visible.
@Suite struct KeyWatchTests {
    final class Keys {
        var revoked: Set<UInt32> = []
        var inUse: Set<UInt32> = [1, 2]
        var reads = 0
    }

    func watch(_ loop: ManualEventLoop, _ keys: Keys, ended: @escaping (UInt32) -> Void) -> KeyWatch {
        KeyWatch(loop: loop, keysInUse: { keys.inUse }, isCurrent: { key in
            keys.reads += 1
            return !keys.revoked.contains(key)
        }, ended: ended)
    }

    /// Polling: a bound link arms the one-second look, which reads the keys every second.
    @Test func withoutReportsItReadsTheKeysEverySecond() {
        let loop = ManualEventLoop(), keys = Keys()
        let watch = watch(loop, keys) { _ in }
        watch.linkBound()
        loop.advance(by: .seconds(10))
        #expect(keys.reads == 20, "two keys, ten looks")
        watch.stop()
    }

    /// With reports: a linked, idle lock reads no key and keeps no timer.
    @Test func withReportsAnIdleLockReadsNothing() {
        let loop = ManualEventLoop(), keys = Keys()
        let watch = watch(loop, keys) { _ in }
        watch.changesAreReported()
        watch.linkBound()
        loop.advance(by: .seconds(3600))
        #expect(keys.reads == 0)
        #expect(loop.pendingCount == 0, "no timer while nothing changes")
    }

    /// A revocation reported by a change ends the key's links at once.
    @Test func aReportedRevocationEndsTheKeyAtOnce() {
        let loop = ManualEventLoop(), keys = Keys()
        var ended: [UInt32] = []
        let watch = watch(loop, keys) { ended.append($0) }
        watch.changesAreReported()
        watch.linkBound()
        keys.revoked = [2]
        watch.keysMayHaveChanged()
        #expect(ended == [2])
    }

    /// The change was reported before the revoking commit was visible (the writer publishes it
    /// after its last write to the file): the look a second later finds it.
    @Test func aCommitNotYetVisibleAtTheChangeIsFoundASecondLater() {
        let loop = ManualEventLoop(), keys = Keys()
        var ended: [UInt32] = []
        let watch = watch(loop, keys) { ended.append($0) }
        watch.changesAreReported()
        watch.linkBound()
        watch.keysMayHaveChanged()
        #expect(ended.isEmpty)
        keys.revoked = [1]
        loop.advance(by: KeyWatch.period)
        #expect(ended == [1])
        #expect(loop.pendingCount == 0, "one look after the change, then none")
    }

    /// Changes with no link bound to a key read nothing.
    @Test func changesWithNoKeyInUseReadNothing() {
        let loop = ManualEventLoop(), keys = Keys()
        keys.inUse = []
        let watch = watch(loop, keys) { _ in }
        watch.changesAreReported()
        watch.keysMayHaveChanged()
        loop.advance(by: .seconds(5))
        #expect(keys.reads == 0)
    }
}
