import LatchkeyAgents
import LatchkeyPosix
import LatchkeyTransport
import Logging

/// The agent's side of `Type=notify`: READY=1 once the agent's own timeline says it is
/// ready, not when the process merely started. The lock is ready at `lock.advertising`
/// (outputs were requested inactive and sensors read before `lock.started`, which comes
/// first); the phone at `phone.connect_pending` (the never-timing-out connect is queued).
/// Feeds `WatchdogSec=` from the event loop, so a wedged loop is what systemd notices.
public final class ServiceReadiness {
    let notifier: SystemdNotifier
    let readyEvent: String
    let logger: Logger
    public private(set) var isReady = false
    public private(set) var watchdog: WatchdogFeeder?

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
        guard !isReady, event.name == readyEvent, event.field("error") == nil else { return }
        isReady = true
        if notifier.notify(["READY=1", "STATUS=\(event.name)"]) { logger.info("told systemd: ready") }
    }

    public func stopping() {
        watchdog?.cancel()
        notifier.notify(["STOPPING=1"])
    }
}
