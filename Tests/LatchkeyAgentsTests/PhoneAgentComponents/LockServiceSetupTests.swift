import LatchkeyATT
import LatchkeyLockProtocol
import LatchkeyManagers
@testable import LatchkeyPhoneAgent
import Testing

/// The lock service's setup state alone, with stand-in characteristics: what binds, the setup's
/// timeout and its wake-up work, one rediscovery per link.
struct LockServiceSetupTests {
    final class Handle {}

    final class Rig {
        let rig = PhoneComponentRig()
        let gate: ApplicationGate
        let tasks = BackgroundTasks()
        var timeouts = 0
        lazy var setup = LockServiceSetup<Handle>(timeout: .seconds(10), backgroundTasks: tasks, loop: rig.loop) {
            [unowned self] in self.timeouts += 1
        }
        init() {
            gate = ApplicationGate(loop: rig.loop, mode: .background)
            tasks.gate = gate
        }
    }

    static func service(without missing: BluetoothUUID? = nil) -> [BluetoothUUID: Handle] {
        var all = [LockServiceUUID.lockControl: Handle(), LockServiceUUID.challenge: Handle(),
                   LockServiceUUID.lockState: Handle(), LockServiceUUID.dataTransfer: Handle()]
        if let missing { all[missing] = nil }
        return all
    }

    @Test func everyCharacteristicACommandNeedsMustBind() {
        let r = Rig()
        #expect(!r.setup.bind { Self.service(without: LockServiceUUID.challenge)[$0] })
        #expect(r.setup.bind { Self.service(without: LockServiceUUID.dataTransfer)[$0] })
        #expect(r.setup.transfer == nil && r.setup.control != nil)
        let all = Self.service()
        #expect(r.setup.bind { all[$0] })
        #expect(r.setup.status === all[LockServiceUUID.lockState] && r.setup.transfer === all[LockServiceUUID.dataTransfer])
    }

    @Test func aSetupNotReadyInTimeIsGivenUpAndItsWakeWorkEnds() {
        let r = Rig()
        r.gate.suspend()
        r.gate.deliver("link up") { r.setup.linkFormed() }
        #expect(r.tasks.openTasks == [WakeWork.setupTask])
        r.rig.loop.advance(by: .seconds(10) - .milliseconds(1))
        #expect(r.timeouts == 0)
        r.rig.loop.advance(by: .milliseconds(1))
        #expect(r.timeouts == 1 && r.tasks.openTasks.isEmpty && !r.setup.ready)
    }

    @Test func aReadySetupIsNotTimedAndItsWorkEndsWhenDone() {
        let r = Rig()
        r.gate.suspend()
        r.gate.deliver("link up") {
            r.setup.linkFormed()
            r.setup.becameReady()
        }
        #expect(r.setup.ready && r.tasks.openTasks == [WakeWork.setupTask])
        r.setup.setupDone()
        r.rig.loop.advance(by: .seconds(20))
        #expect(r.timeouts == 0 && r.tasks.openTasks.isEmpty)
    }

    @Test func aStaleCacheEarnsOneRediscoveryPerLink() {
        let r = Rig()
        let all = Self.service()
        r.setup.linkFormed()
        r.setup.bind { all[$0] }
        #expect(r.setup.staleCacheFound() && r.setup.control == nil && r.setup.transfer == nil)
        #expect(!r.setup.staleCacheFound())
        r.setup.linkLost()
        r.setup.linkFormed()
        #expect(r.setup.staleCacheFound())
    }

    @Test func aNewLinkKeepsOnlyTheTransferBindingAndARestartKeepsNothing() {
        let r = Rig()
        let all = Self.service()
        r.setup.bind { all[$0] }
        r.setup.becameReady()
        r.setup.linkFormed()
        #expect(!r.setup.ready && r.setup.control == nil && r.setup.transfer != nil)
        r.setup.bind { all[$0] }
        r.setup.becameReady()
        r.setup.restart()
        #expect(!r.setup.ready && r.setup.transfer == nil && r.setup.status == nil)
        r.setup.linkLost()
        r.rig.loop.advance(by: .seconds(20))
        #expect(r.timeouts == 0)
    }
}
