import LatchkeyMgmt
import LatchkeyTransport
import Testing

@testable import LatchkeyKernel

/// `ControllerMirror` on its own: what mgmt said in, the managers' state out.
@Suite struct ControllerMirrorTests {
    @Test func theStateStartsFromTheSettingsReadAtOpen() {
        #expect(ControllerMirror(settings: [.powered, .lowEnergy]).state == .poweredOn)
        #expect(ControllerMirror(settings: [.lowEnergy]).state == .poweredOff)
        #expect(ControllerMirror(settings: [.powered]).state == .poweredOff, "powered without LE is no LE radio")
    }

    @Test func updateReturnsTheNewStateOnlyWhenItChanged() {
        let mirror = ControllerMirror(settings: [.lowEnergy])
        mirror.apply([.lowEnergy, .connectable])
        #expect(mirror.update() == nil, "still off: nothing to tell")
        mirror.apply([.lowEnergy, .powered])
        #expect(mirror.state == .poweredOff, "the managers' state moves on update only")
        #expect(mirror.update() == .poweredOn)
        #expect(mirror.state == .poweredOn)
        #expect(mirror.update() == nil)
    }

    @Test func aRefusalWinsOverTheSettings() {
        let mirror = ControllerMirror(settings: [.powered, .lowEnergy])
        #expect(!mirror.isRefused)
        mirror.refuse(.unauthorized)
        #expect(mirror.isRefused)
        #expect(mirror.update() == .unauthorized)
        mirror.apply([.powered, .lowEnergy])
        #expect(mirror.update() == nil && mirror.state == .unauthorized)
    }

    @Test func aDetachedControllerIsOffUntilItComesBack() {
        let mirror = ControllerMirror(settings: [.powered, .lowEnergy])
        mirror.detach()
        #expect(!mirror.isAttached)
        #expect(mirror.update() == .poweredOff)
        mirror.apply([.powered, .lowEnergy])
        #expect(mirror.update() == nil, "settings of a detached controller do not power it")
        mirror.attach([.powered, .lowEnergy])
        #expect(mirror.isAttached)
        #expect(mirror.update() == .poweredOn)
    }
}
