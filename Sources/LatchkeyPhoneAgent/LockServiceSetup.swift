import LatchkeyATT
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyTransport

/// What the lock service's setup needs of the link's peripheral: the lock service as its proxy
/// holds it (from this link, an earlier one, or a restored cache) and the requests that
/// discover what is missing. `Peripheral` is one; a test's stand-in is another.
protocol LockServicePeripheral<Characteristic>: AnyObject {
    associatedtype Characteristic: AnyObject
    var isConnected: Bool { get }
    /// The lock service is known.
    var hasLockService: Bool { get }
    /// The lock service's characteristics were discovered (or restored), even if some are missing.
    var lockCharacteristicsKnown: Bool { get }
    func lockCharacteristic(_ uuid: BluetoothUUID) -> Characteristic?
    func discoverLockService()
    func discoverLockCharacteristics()
    func discardAttributeCache()
}

/// The lock service's GATT setup on the current link (restoration's step 4,
/// docs/RESTORATION.md) as a sequence that resumes where it stopped: each step looks at what
/// the peripheral already holds and only asks the lock for what is missing, so a phone back at
/// a lock it knows is ready at once, and a relaunched phone whose link survived it discovers
/// nothing. It keeps the characteristics bound, whether the link is ready for commands, the
/// setup's timeout, and the one rediscovery a stale cache earns per link. Generic over the
/// peripheral, so that it runs without a radio.
final class LockServiceSetup<Link: LockServicePeripheral> {
    typealias Characteristic = Link.Characteristic
    private let timeout: Duration
    private let backgroundTasks: BackgroundTasks
    private let events: PhoneEventOutput
    private var loop: any EventLoop { events.loop }
    private let isComplete: (Link) -> Void
    private let timedOut: () -> Void
    /// The lock service's characteristics, once discovered (or restored) on the current link.
    private var boundControl: Characteristic?
    private var boundChallenge: Characteristic?
    private var boundStatus: Characteristic?
    private var boundTransfer: Characteristic?
    private var isReady = false
    /// The cache was found stale on this link and discovered again (once per link).
    private var rediscoveredOnThisLink = false
    private var setupTimer: Scheduled?

    /// `complete` runs when every characteristic a command needs is bound on a connected link
    /// (the coordinator makes the link ready); `timedOut` when a setup has not made the link
    /// ready within `timeout`.
    init(timeout: Duration, backgroundTasks: BackgroundTasks, events: PhoneEventOutput,
         complete: @escaping (Link) -> Void, timedOut: @escaping () -> Void) {
        self.timeout = timeout
        self.backgroundTasks = backgroundTasks
        self.events = events
        self.isComplete = complete
        self.timedOut = timedOut
    }

    var ready: Bool { isReady }
    var control: Characteristic? { boundControl }
    var challenge: Characteristic? { boundChallenge }
    var status: Characteristic? { boundStatus }
    var transfer: Characteristic? { boundTransfer }

    /// A new link: not ready, its setup starts (the data-transfer binding survives, as the
    /// service it came from may be cached).
    func linkFormed() {
        isReady = false
        rediscoveredOnThisLink = false
        boundControl = nil; boundChallenge = nil; boundStatus = nil
        armSetupTimer()
    }

    /// The lock service's handles changed under the link: nothing stays bound, the setup runs again.
    func restart() {
        isReady = false
        forgetBindings()
        armSetupTimer()
    }

    /// The link went: not ready, no setup under way.
    func linkLost() {
        isReady = false
        setupTimer?.cancel()
        setupTimer = nil
        backgroundTasks.end(WakeWork.setupTask)
    }

    /// Binds the lock service's characteristics `find` knows; false when one a command needs is missing.
    @discardableResult
    func bind(_ find: (BluetoothUUID) -> Characteristic?) -> Bool {
        boundTransfer = find(LockServiceUUID.dataTransfer)
        boundControl = find(LockServiceUUID.lockControl)
        boundChallenge = find(LockServiceUUID.challenge)
        boundStatus = find(LockServiceUUID.lockState)
        return boundControl != nil && boundChallenge != nil && boundStatus != nil
    }

    /// The next missing step on `link`: the lock service, its characteristics, or none (then
    /// the setup is complete). The status subscription follows the first command, whose
    /// session it needs (`subscribeOnceInSession`): the lock refuses it to a link without one.
    func continueSetup(on link: Link) {
        guard link.isConnected else { return }
        guard link.hasLockService else {
            link.discoverLockService()
            return
        }
        guard link.lockCharacteristicsKnown, bind({ link.lockCharacteristic($0) }) else {
            link.discoverLockCharacteristics()
            return
        }
        isComplete(link)
    }

    /// The answer to the lock service's discovery.
    func servicesDiscovered(on link: Link, error: BluetoothError?) {
        guard link.hasLockService else {
            emit(.phoneGattFailed(step: "services", error: error.map { "\($0)" } ?? "lock service missing"))
            return
        }
        continueSetup(on: link)
    }

    /// The answer to the discovery of the lock service's characteristics, which `find` knows.
    func characteristicsDiscovered(on link: Link, find: (BluetoothUUID) -> Characteristic?, error: BluetoothError?) {
        guard bind(find) else {
            emit(.phoneGattFailed(step: "characteristics", error: error.map { "\($0)" } ?? "missing"))
            return
        }
        continueSetup(on: link)
    }

    /// The answer to the status subscription (a stale cache may show here first).
    func statusSubscriptionChanged(on link: Link, error: BluetoothError?) {
        if let error {
            if rediscoverIfStale(on: link, error) { return }
            emit(.phoneGattFailed(step: "subscribe", error: "\(error)"))
            return
        }
        emit(.phoneSubscribed)
    }

    /// A cached handle the lock does not have (its service changed since the cache was
    /// made): forget the cache and discover again, once per link. True when it did.
    func rediscoverIfStale(on link: Link, _ error: BluetoothError) -> Bool {
        guard case .att(let code) = error, code == .invalidHandle || code == .attributeNotFound,
              staleCacheFound() else { return false }
        emit(.phoneCacheStale(error: "\(error)"))
        link.discardAttributeCache()
        continueSetup(on: link)
        return true
    }

    /// A cached handle the lock does not have: true when this link may discover again (once),
    /// and nothing stays bound.
    func staleCacheFound() -> Bool {
        guard !rediscoveredOnThisLink else { return false }
        rediscoveredOnThisLink = true
        forgetBindings()
        return true
    }

    /// The lock service is usable: the link is ready, the setup's timeout disarmed. The wake-up
    /// work stays open until `setupDone`, once what waits for the link has begun.
    func becameReady() {
        isReady = true
        setupTimer?.cancel()
        setupTimer = nil
    }

    func setupDone() {
        backgroundTasks.end(WakeWork.setupTask)
    }

    /// The GATT setup starts: under its timeout, and marked as wake work so a background
    /// wake-up covers it.
    private func armSetupTimer() {
        setupTimer?.cancel()
        setupTimer = loop.schedule(after: timeout) { [weak self] in self?.setupTimedOut() }
        backgroundTasks.begin(WakeWork.setupTask)
    }

    private func setupTimedOut() {
        setupTimer = nil
        backgroundTasks.end(WakeWork.setupTask)
        guard !isReady else { return }
        timedOut()
    }

    private func forgetBindings() {
        boundControl = nil; boundChallenge = nil; boundStatus = nil; boundTransfer = nil
    }

    private func emit(_ event: Event) { events.emit(event) }
}
