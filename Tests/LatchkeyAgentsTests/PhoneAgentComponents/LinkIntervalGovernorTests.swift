import LatchkeyEvents
@testable import LatchkeyPhoneAgent
import Testing

/// The link interval's pacing alone: idle after `idleAfter`, fast again at work, a refusal said once.
struct LinkIntervalGovernorTests {
    final class FakeLink {
        var idle = true
        var connected = true
        var accepts = true
        var asked: [Duration] = []
        var link: LinkIntervalGovernor.Link {
            LinkIntervalGovernor.Link(isIdle: { self.idle }, isConnected: { self.connected },
                                      request: { self.asked.append($0); return self.accepts })
        }
    }

    func governor(_ rig: PhoneComponentRig, _ link: FakeLink, slow: Duration? = .milliseconds(50)) -> LinkIntervalGovernor {
        LinkIntervalGovernor(connectionInterval: .microseconds(7_500), idleConnectionInterval: slow,
                             idleAfter: .seconds(5), link: link.link, events: rig.output)
    }

    @Test func anIdleLinkSlowsAfterIdleAfterAndWorkMakesItFastAgain() {
        let rig = PhoneComponentRig()
        let link = FakeLink()
        let g = governor(rig, link)
        g.linkWentIdle()
        rig.loop.advance(by: .seconds(5) - .milliseconds(1))
        #expect(link.asked.isEmpty)
        rig.loop.advance(by: .milliseconds(1))
        #expect(link.asked == [.milliseconds(50)] && g.isSlowed)
        g.linkBecameBusy()
        #expect(link.asked == [.milliseconds(50), .microseconds(7_500)] && !g.isSlowed)
        let said = rig.sink.events.filter { $0.name == EventKind.phoneLinkInterval.name }.map { $0.field("why") }
        #expect(said == ["idle", "busy"])
    }

    @Test func workBeforeTheIdleTimeKeepsTheLinkFast() {
        let rig = PhoneComponentRig()
        let link = FakeLink()
        let g = governor(rig, link)
        g.linkWentIdle()
        rig.loop.advance(by: .seconds(4))
        g.linkBecameBusy()
        rig.loop.advance(by: .seconds(10))
        #expect(link.asked.isEmpty && rig.loop.pendingCount == 0)
    }

    @Test func aLinkThatIsBusyOrGoneWhenTheTimerFiresIsLeftAlone() {
        let rig = PhoneComponentRig()
        let link = FakeLink()
        let g = governor(rig, link)
        g.linkWentIdle()
        link.idle = false
        rig.loop.advance(by: .seconds(5))
        link.idle = true
        g.linkWentIdle()
        link.connected = false
        rig.loop.advance(by: .seconds(5))
        #expect(link.asked.isEmpty)
        link.idle = false
        g.linkWentIdle()
        #expect(rig.loop.pendingCount == 0)
    }

    @Test func noSlowIntervalConfiguredAsksNothing() {
        let rig = PhoneComponentRig()
        let link = FakeLink()
        let g = governor(rig, link, slow: nil)
        g.linkWentIdle()
        #expect(rig.loop.pendingCount == 0)
    }

    @Test func aRefusingTransportIsSaidOnceAndTheLinkIsNotThoughtSlowed() {
        let rig = PhoneComponentRig()
        let link = FakeLink()
        link.accepts = false
        let g = governor(rig, link)
        for _ in 0..<3 { g.linkWentIdle(); rig.loop.advance(by: .seconds(5)) }
        #expect(link.asked.count == 3 && !g.isSlowed)
        #expect(rig.names().filter { $0 == EventKind.phoneLinkIntervalUnsupported.name }.count == 1)
        g.forgetLinkInterval()
        #expect(rig.loop.pendingCount == 0)
    }
}
