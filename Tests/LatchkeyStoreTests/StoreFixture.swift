import Foundation
import LatchkeyLock
import LatchkeySecurity
import LatchkeySim
@testable import LatchkeyStore
import LatchkeyTransport

/// A private scratch directory (mkdtemp), removed when the fixture goes away.
final class ScratchDirectory {
    let path: String

    init() {
        var template = Array("/tmp/latchkey-store-test-XXXXXX".utf8CString)
        // The name is read inside the closure: the pointer `&template` would give mkdtemp is
        // valid only during that call, and reading it afterwards crashed on arm64.
        path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The state directory the tests hand to the store (created by the store).
    var state: String { path + "/state" }
}

/// The two clocks a store sees, moved by hand. `restartProcess` models a new process (or a
/// reboot): the monotonic clock starts again from another origin; wall time goes on.
final class TestClocks {
    var wallNanos: Int64 = 1_750_000_000 * 1_000_000_000
    var monotonic = Instant(nanoseconds: 5_000_000_000)

    var wall: WallClock { WallClock { [unowned self] in wallNanos } }

    func advance(by duration: Duration) {
        wallNanos += duration.nanoseconds
        monotonic += duration
    }

    func restartProcess(monotonicOrigin: Instant = Instant(nanoseconds: 123_000_000)) {
        monotonic = monotonicOrigin
    }
}

/// A store in a scratch directory, reopened at will on the same file.
final class StoreFixture {
    let scratch = ScratchDirectory()
    let clocks = TestClocks()
    static let fileName = "lock.db"

    /// What the store opens through: the real calls, or a simulated disk's VFS.
    var fileSystem = StoreFileSystem.system

    var path: String { scratch.state + "/" + Self.fileName }

    /// The lock's runtime directory's ledger: it outlives each process that opens the store,
    /// as `/run/latchkey/lock` outlives a restart.
    lazy var refusedCommits = RefusedCommitLedger(directory: scratch.path)

    func open() throws(StoreError) -> AgentStore {
        let store = try AgentStore(directory: scratch.state, fileName: Self.fileName, wallClock: clocks.wall,
                                   fileSystem: fileSystem)
        store.refusedCommits = refusedCommits
        return store
    }

    func journal(_ store: AgentStore) -> StoredDecisionJournal {
        store.decisionJournal(monotonicNow: { [unowned self] in clocks.monotonic })
    }

    /// A decision made now on the test's monotonic clock, valid for `validity`.
    func decision(_ id: UInt64, _ operation: LockOperationType, validity: Duration = .seconds(5),
                  who: KeyID? = KeyID(7), relockAfter: Duration? = nil) -> LockDecision {
        LockDecision(id: DecisionID(id), operation: operation, source: .remote, who: who,
                     decidedAt: clocks.monotonic, deadline: clocks.monotonic + validity, relockAfter: relockAfter)
    }
}

extension FileManager {
    func permissions(_ path: String) -> Int? {
        (try? attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
    }
}

extension AgentStore {
    /// Where the WAL's last committed frame ends (its header, then frames of a 4 KiB page
    /// and a 24-octet header each). The file is longer: the store lays it out to
    /// `walWorkingSize` up front, so a test that damages "the tail" of the WAL aims here.
    var walEnd: Int { 32 + connection.walFrames * (4096 + 24) }
}

/// A lock and a phone in range of each other on the simulated air, and key 1 (alice) in the
/// fixture's store: the scene of the tests that run both agents over a real store.
struct AirScene {
    let loop = ManualEventLoop()
    let air: SimulatedAir
    let lockAddress = BluetoothAddress(0xC0FFEE000001), phoneAddress = BluetoothAddress(0xC0FFEE000002)
    let store: AgentStore
    let key = PhoneKey(id: 1, name: "alice", secret: CommandSealing.newSecret(), role: .user)

    init(_ fixture: StoreFixture, seed: UInt64) throws {
        air = SimulatedAir(loop: loop, seed: seed)
        _ = air.addDevice(address: lockAddress, position: 0)
        _ = air.addDevice(address: phoneAddress, position: 1)
        store = try fixture.open()
        try store.keyStore().add(key)
    }
}
