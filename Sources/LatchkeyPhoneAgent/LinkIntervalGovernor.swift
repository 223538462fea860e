import LatchkeyEvents
import LatchkeyManagers
import LatchkeyTransport

/// A fast connection interval while the link is set up or a command runs, a slow one while
/// it idles (the lever for an idle link; figures in docs/ARCHITECTURE.md, "Link to unlock"). At 7.5 ms
/// both radios meet 133 times a second; an idle owner at home needs none of that. After
/// `idleAfter` with nothing to do — by default the held challenge's life, so a command
/// that finds a challenge held also finds the link fast — the phone asks for
/// `idleConnectionInterval` (an LE Connection Update). A command on a slowed link goes at
/// once, at the slow interval, and asks for the fast one beside it: waiting for the update
/// would cost its instant, six slow events, before the command's first PDU.
final class LinkIntervalGovernor {
    /// What the governor needs of the link it paces.
    struct Link {
        /// Nothing under way on a ready link: no command, no read ahead, no log fetch.
        var isIdle: () -> Bool
        var isConnected: () -> Bool
        /// Asks the system for an interval on the live link; false when it refuses.
        var request: (Duration) -> Bool
    }

    private let fast: Duration?
    private let slow: Duration?
    private let idleAfter: Duration
    private let link: Link
    private let events: PhoneEventOutput
    private var loop: any EventLoop { events.loop }
    /// The idle link's slow interval: its timer, whether it is in force, and whether the
    /// transport's refusal has been said.
    private var idleTimer: Scheduled?
    private var linkSlowed = false
    private var linkIntervalRefusalSaid = false

    init(connectionInterval: Duration?, idleConnectionInterval: Duration?, idleAfter: Duration, link: Link,
         events: PhoneEventOutput) {
        self.fast = connectionInterval
        self.slow = idleConnectionInterval
        self.idleAfter = idleAfter
        self.link = link
        self.events = events
    }

    /// The slow interval is in force on this link.
    var isSlowed: Bool { linkSlowed }

    /// The link has nothing to do: slow it down after `idleAfter`, unless work comes first.
    func linkWentIdle() {
        guard slow != nil, link.isIdle() else { return }
        idleTimer?.cancel()
        idleTimer = loop.schedule(after: idleAfter) { [weak self] in
            guard let self else { return }
            idleTimer = nil
            guard let slow, link.isIdle(), link.isConnected() else { return }
            askForInterval(slow, slowing: true)
        }
    }

    /// Work for the link (a command, a log fetch): the fast interval again if it was slowed.
    /// The work does not wait for it.
    func linkBecameBusy() {
        idleTimer?.cancel()
        idleTimer = nil
        guard linkSlowed else { return }
        askForInterval(fast ?? ConnectionParameters.kernelDefault.connectionInterval, slowing: false)
    }

    /// A new link, or none: it runs at the interval the connection was made with.
    func forgetLinkInterval() {
        idleTimer?.cancel()
        idleTimer = nil
        linkSlowed = false
    }

    private func askForInterval(_ interval: Duration, slowing: Bool) {
        if link.request(interval) {
            linkSlowed = slowing
            emit(.phoneLinkInterval(ms: interval, why: slowing ? .idle : .busy))
        } else if !linkIntervalRefusalSaid {
            // Once per agent: the kernel transport cannot update a live link (no mgmt command).
            linkIntervalRefusalSaid = true
            emit(.phoneLinkIntervalUnsupported(ms: interval))
        }
    }

    private func emit(_ event: Event) { events.emit(event) }
}
