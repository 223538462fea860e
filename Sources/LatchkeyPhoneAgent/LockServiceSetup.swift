import LatchkeyATT
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyTransport

/// The lock service's GATT setup on the current link (restoration's step 4,
/// docs/RESTORATION.md): the characteristics bound to it, whether the link is ready for
/// commands, the setup's timeout, and the one rediscovery a stale cache earns per link. The
/// coordinator runs the discovery steps; this component keeps what they found. Generic over
/// the characteristic's type, so that it runs without a radio.
final class LockServiceSetup<Characteristic: AnyObject> {
    private let timeout: Duration
    private let backgroundTasks: BackgroundTasks
    private let loop: any EventLoop
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

    /// `timedOut` runs when a setup has not made the link ready within `timeout`.
    init(timeout: Duration, backgroundTasks: BackgroundTasks, loop: any EventLoop, timedOut: @escaping () -> Void) {
        self.timeout = timeout
        self.backgroundTasks = backgroundTasks
        self.loop = loop
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
}
