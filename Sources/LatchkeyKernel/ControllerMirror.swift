import LatchkeyMgmt
import LatchkeyTransport

/// The controller as the kernel last reported it — its settings, whether its index is ours
/// (attached), a refusal that makes it unusable (no permission, no LE) — and the radio state
/// the managers see, computed from those. It owns that state; the transport applies what mgmt
/// says, then asks `update()` whether the state the managers see changed, and acts on it.
final class ControllerMirror {
    private var settings: MgmtSettings
    private var attached = true
    private var refusal: RadioState?
    private var reported: RadioState

    init(settings: MgmtSettings) {
        self.settings = settings
        reported = .unknown
        reported = computed
    }

    /// The state the managers last saw (`update()` moves it).
    var state: RadioState { reported }
    /// Whether our controller's index is present: commands go to it only then.
    var isAttached: Bool { attached }
    /// Whether the kernel refused to make the controller usable.
    var isRefused: Bool { refusal != nil }

    /// New Current_Settings (an answer or New Settings).
    func apply(_ newSettings: MgmtSettings) { settings = newSettings }

    /// The kernel refused to make the controller usable: the managers see `state` from now on.
    func refuse(_ state: RadioState) { refusal = state }

    /// The index went away, or the mgmt socket closed.
    func detach() { attached = false }

    /// Our controller came back (same address) with `newSettings`.
    func attach(_ newSettings: MgmtSettings) {
        attached = true
        settings = newSettings
    }

    /// Moves the state the managers see to the computed one. Returns the new state when it
    /// changed, nil when it did not.
    func update() -> RadioState? {
        let newState = computed
        guard newState != reported else { return nil }
        reported = newState
        return newState
    }

    private var computed: RadioState {
        if let refusal { return refusal }
        guard attached else { return .poweredOff }
        return settings.isSuperset(of: [.powered, .lowEnergy]) ? .poweredOn : .poweredOff
    }
}
