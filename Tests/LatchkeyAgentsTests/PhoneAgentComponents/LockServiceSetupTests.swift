import LatchkeyATT
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
@testable import LatchkeyPhoneAgent
import Testing

/// The lock service's setup alone, over a stand-in peripheral: the discovery steps that ask
/// only for what is missing, what binds, the setup's timeout and its wake-up work, one
/// rediscovery per link.
struct LockServiceSetupTests {
    final class Handle {}

    /// A peripheral whose lock service and characteristics a test sets, and which counts the
    /// discoveries asked of it.
    final class StandIn: LockServicePeripheral {
        var isConnected = true
        var hasLockService = false
        /// The lock service's characteristics, once discovered (nil: not yet).
        var characteristics: [BluetoothUUID: Handle]?
        var lockCharacteristicsKnown: Bool { characteristics != nil }
        var asked: [String] = []
        func lockCharacteristic(_ uuid: BluetoothUUID) -> Handle? { characteristics?[uuid] }
        func discoverLockService() { asked.append("services") }
        func discoverLockCharacteristics() { asked.append("characteristics") }
        func discardAttributeCache() {
            asked.append("discard")
            hasLockService = false
            characteristics = nil
        }
    }

    final class Rig {
        let rig = PhoneComponentRig()
        let gate: ApplicationGate
        let tasks = BackgroundTasks()
        let link = StandIn()
        var timeouts = 0
        var completed = 0
        lazy var setup = LockServiceSetup<StandIn>(
            timeout: .seconds(10), backgroundTasks: tasks, events: rig.output,
            complete: { [unowned self] in
                #expect($0 === self.link)
                self.completed += 1
            },
            timedOut: { [unowned self] in self.timeouts += 1 })
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

    @Test func eachStepAsksOnlyForWhatIsMissing() {
        let r = Rig()
        r.setup.linkFormed()
        r.setup.continueSetup(on: r.link)
        #expect(r.link.asked == ["services"] && r.completed == 0)
        r.link.hasLockService = true
        r.setup.servicesDiscovered(on: r.link, error: nil)
        #expect(r.link.asked == ["services", "characteristics"] && r.completed == 0)
        r.link.characteristics = Self.service()
        r.setup.characteristicsDiscovered(on: r.link, find: { r.link.characteristics?[$0] }, error: nil)
        #expect(r.link.asked.count == 2 && r.completed == 1 && r.setup.control != nil)
        // A lock the cache knows: complete at once, nothing asked of the lock.
        r.setup.linkFormed()
        r.setup.continueSetup(on: r.link)
        #expect(r.link.asked.count == 2 && r.completed == 2)
        r.link.isConnected = false
        r.setup.continueSetup(on: r.link)
        #expect(r.link.asked.count == 2 && r.completed == 2, "nothing on a link that went")
        #expect(r.rig.names().isEmpty)
    }

    @Test func aCachedServiceMissingACharacteristicIsDiscoveredAgain() {
        let r = Rig()
        r.link.hasLockService = true
        r.link.characteristics = Self.service(without: LockServiceUUID.lockState)
        r.setup.continueSetup(on: r.link)
        #expect(r.link.asked == ["characteristics"] && r.completed == 0)
    }

    @Test func aLockWithoutTheServiceOrACharacteristicIsSaidAndNotReady() {
        let r = Rig()
        r.setup.servicesDiscovered(on: r.link, error: nil)
        #expect(r.rig.sink.events.last?.name == EventKind.phoneGattFailed.name)
        #expect(r.rig.sink.events.last?.field("step") == "services")
        #expect(r.rig.sink.events.last?.field("error") == "lock service missing")
        r.setup.servicesDiscovered(on: r.link, error: .notConnected)
        #expect(r.rig.sink.events.last?.field("error") == "\(BluetoothError.notConnected)")
        r.link.hasLockService = true
        let partial = Self.service(without: LockServiceUUID.challenge)
        r.setup.characteristicsDiscovered(on: r.link, find: { partial[$0] }, error: nil)
        #expect(r.rig.sink.events.last?.field("step") == "characteristics")
        #expect(r.rig.sink.events.last?.field("error") == "missing")
        #expect(r.completed == 0 && r.link.asked.isEmpty)
    }

    @Test func aStaleHandleDiscardsTheCacheAndDiscoversAgainOncePerLink() {
        let r = Rig()
        r.link.hasLockService = true
        r.link.characteristics = Self.service()
        r.setup.linkFormed()
        r.setup.continueSetup(on: r.link)
        #expect(!r.setup.rediscoverIfStale(on: r.link, .att(.writeNotPermitted)), "not a stale cache")
        #expect(!r.setup.rediscoverIfStale(on: r.link, .notConnected))
        #expect(r.setup.rediscoverIfStale(on: r.link, .att(.invalidHandle)))
        #expect(r.link.asked == ["discard", "services"] && r.setup.control == nil)
        #expect(r.rig.sink.events.last?.name == EventKind.phoneCacheStale.name)
        r.link.hasLockService = true
        r.link.characteristics = Self.service()
        r.setup.continueSetup(on: r.link)
        #expect(!r.setup.rediscoverIfStale(on: r.link, .att(.attributeNotFound)), "once per link")
        #expect(r.link.asked.count == 2 && r.completed == 2)
    }

    @Test func theStatusSubscriptionIsSaidAndAStaleOneDiscoversAgain() {
        let r = Rig()
        r.setup.linkFormed()
        r.setup.statusSubscriptionChanged(on: r.link, error: nil)
        #expect(r.rig.names() == [EventKind.phoneSubscribed.name])
        r.setup.statusSubscriptionChanged(on: r.link, error: .att(.invalidHandle))
        #expect(r.rig.sink.events.last?.name == EventKind.phoneCacheStale.name && r.link.asked.first == "discard")
        r.setup.statusSubscriptionChanged(on: r.link, error: .att(.invalidHandle))
        #expect(r.rig.sink.events.last?.name == EventKind.phoneGattFailed.name)
        #expect(r.rig.sink.events.last?.field("step") == "subscribe")
    }
}
