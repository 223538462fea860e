import LatchkeyKernelSockets
import LatchkeyMgmt
import LatchkeyTransport

/// What `ControllerLifecycle` needs of its coordinator: the mgmt socket, where the power
/// request's answer goes, and what the controller going, coming and changing state means
/// beyond it.
protocol ControllerLifecycleHost: AnyObject {
    /// Sends `command` to the controller at `index`, attached or not (the information read of
    /// a controller that appeared goes to an index that is not ours yet).
    func send(_ command: MgmtCommand, to index: MgmtIndex, _ completion: @escaping MgmtClient.Completion)
    /// The power request took (`error` nil) or was refused in a way that is asked again.
    func powerAnswered(_ error: MgmtError?)
    /// A refusal that makes the radio unusable, or a controller hardware error.
    func report(_ error: KernelError)
    /// The state the managers see moved to `state`.
    func stateChanged(to state: RadioState)
    /// Our controller's index went away: what was tied to it is dropped.
    func controllerDetached()
    /// Our controller came back (same address), perhaps at another index.
    func controllerReattached()
    /// The mgmt socket closed: nothing can be sent any more.
    func mgmtSocketClosed(_ error: KernelError)
}

/// The controller's own life as mgmt tells it: it is set up (LE on, not bondable,
/// connectable, powered), its settings and power state follow New Settings, its index goes
/// away and comes back (the same address, perhaps another index), and the mgmt socket may
/// close. It owns the index commands go to and the controller's mirror (`ControllerMirror`);
/// the host re-asserts what it wants when the state moves.
final class ControllerLifecycle {
    weak var host: (any ControllerLifecycleHost)?
    private let address: BluetoothAddress
    private var currentIndex: MgmtIndex
    private let controller: ControllerMirror

    init(index: MgmtIndex, info: ControllerInfo) {
        currentIndex = index
        address = info.address
        controller = ControllerMirror(settings: info.currentSettings)
    }

    /// The controller's current mgmt index (it can change if the controller reappears).
    var index: MgmtIndex { currentIndex }
    /// Whether our controller's index is present: commands go to it only then.
    var isAttached: Bool { controller.isAttached }
    /// The state the managers see.
    var state: RadioState { controller.state }

    /// Sends `command` to our controller; while it is detached nothing is sent (the host
    /// re-asserts what it wants when it comes back) and false is returned.
    @discardableResult
    func send(_ command: MgmtCommand, _ completion: @escaping MgmtClient.Completion) -> Bool {
        guard isAttached, let host else { return false }
        host.send(command, to: currentIndex, completion)
        return true
    }

    /// LE on, not bondable (pairing is not how Latchkey authenticates), connectable, powered:
    /// each answer carries the new Current_Settings.
    /// A refusal that makes the radio unusable (no permission, no LE) is the state the
    /// managers see, not retried; any other (Busy, Failed) is asked again as `.power`.
    func configure() {
        let round = Refusal()
        let commands: [MgmtCommand] = [.setLowEnergy(true), .setBondable(false), .setConnectable(true), .setPowered(true)]
        for command in commands {
            send(command) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let parameters):
                    // An answer without Current_Settings changes nothing; the next New Settings event brings them.
                    if let settings = try? MgmtReply.currentSettings(parameters, of: command.opcode) { self.apply(settings) }
                case .failure(let error):
                    if error.status == .permissionDenied { self.controller.refuse(.unauthorized) }
                    if error.status == .notSupported && command.opcode == .setLowEnergy { self.controller.refuse(.unsupported) }
                    if !self.controller.isRefused { round.error = round.error ?? error } else { self.host?.report(KernelError(error)) }
                    self.update()
                }
                guard command.opcode == commands.last?.opcode else { return }
                self.host?.powerAnswered(round.error)
            }
        }
    }

    /// The controller's own events (index removed, new settings, a hardware error) on our
    /// index are handled here and true is returned; any other event is the host's to route.
    /// Index Added is asked about whatever its index.
    func handle(_ event: MgmtEvent, on eventIndex: MgmtIndex) -> Bool {
        if case .indexAdded = event {
            indexAdded(eventIndex)
            return true
        }
        guard isAttached, eventIndex == currentIndex else { return true }
        switch event {
        case .indexRemoved:
            detach()
        case .newSettings(let newSettings):
            apply(newSettings)
        case .controllerError(let code):
            host?.report(KernelError(.system, "\(currentIndex) reported a controller hardware error (0x\(String(code, radix: 16)))"))
        default:
            return false
        }
        return true
    }

    /// The mgmt socket closed (`error` nil: it said no more).
    func mgmtClosed(_ error: KernelError?) {
        controller.detach()
        host?.mgmtSocketClosed(error ?? KernelError(.system, "the mgmt socket closed"))
        update()
    }

    private func apply(_ newSettings: MgmtSettings) {
        controller.apply(newSettings)
        update()
    }

    /// Moves to the computed state and tells the host when it changed.
    private func update() {
        guard let newState = controller.update() else { return }
        host?.stateChanged(to: newState)
    }

    /// Our controller went away (unplugged, driver reset).
    private func detach() {
        controller.detach()
        host?.controllerDetached()
        update()
    }

    /// A controller appeared: if it is ours again (same address), take it up.
    private func indexAdded(_ newIndex: MgmtIndex) {
        guard !isAttached else { return }
        host?.send(.readControllerInfo, to: newIndex) { [weak self] result in
            // A controller whose information cannot be read or decoded is not taken for ours; its next Index Added asks again.
            guard let self, !self.isAttached, case .success(let parameters) = result,
                  let info = try? ControllerInfo(decoding: parameters), info.address == self.address else { return }
            self.currentIndex = newIndex
            self.controller.attach(info.currentSettings)
            self.host?.controllerReattached()
            self.configure()
            self.update()
        }
    }
}
