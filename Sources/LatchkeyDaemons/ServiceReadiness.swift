import LatchkeyAgents
import LatchkeyPosix
import LatchkeyTransport
import Logging

/// The agent's side of `Type=notify`: READY=1 once its own timeline says it is ready (the lock
/// at `lock.advertising`, after its outputs were requested inactive and sensors read; the phone
/// at `phone.connect_pending`), and only once the transport has answered every request and
/// `isSettled` holds, re-checked after each later event. Until then systemd holds back what is
/// ordered after the unit, and its start timeout restarts an agent that never gets there.
/// Feeds `WatchdogSec=` from the event loop, so a wedged loop is what systemd notices.
public final class ServiceReadiness {
    let notifier: SystemdNotifier
    let readyEvent: String
    let logger: Logger
    public private(set) var isReady = false
    public private(set) var watchdog: WatchdogFeeder?
    /// Runs its argument once the transport has answered every request made so far
    /// (`BluetoothTransport.afterRequestsAnswered`); at once by default.
    public var afterRequestsAnswered: (@escaping () -> Void) -> Void = { $0() }
    /// What must hold, once the transport's answers are in, for READY to go.
    public var isSettled: () -> Bool = { true }
    private var sawReadyEvent = false

    public init(notifier: SystemdNotifier, readyEvent: String, loop: any EventLoop, logger: Logger) {
        self.notifier = notifier
        self.readyEvent = readyEvent
        self.logger = logger
        watchdog = notifier.feedWatchdog(on: loop)
        if let interval = watchdog?.interval { logger.info("feeding the systemd watchdog", metadata: ["every": "\(interval)"]) }
    }

    /// Watches what `printer` prints (keeping any earlier observer).
    public func observe(_ printer: EventPrinter) {
        let earlier = printer.onEvent
        printer.onEvent = { [weak self] event in
            earlier?(event)
            self?.observe(event)
        }
    }

    public func observe(_ event: AgentEvent) {
        guard !isReady else { return }
        if event.name == readyEvent, event.field("error") == nil { sawReadyEvent = true }
        guard sawReadyEvent else { return }
        let confirm = { [weak self] in
            guard let self, !self.isReady, self.isSettled() else { return }
            self.isReady = true
            if self.notifier.notify(["READY=1", "STATUS=\(self.readyEvent)"]) { self.logger.info("told systemd: ready") }
        }
        afterRequestsAnswered(confirm)
    }

    public func stopping() {
        watchdog?.cancel()
        notifier.notify(["STOPPING=1"])
    }
}
