import LatchkeyAgents
import LatchkeyATT
import LatchkeyEvents
import LatchkeyGATT
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeyPeripheral
import LatchkeySecurity
import LatchkeyTransport

/// The peripheral agent: publishes the lock service, verifies sealed commands, applies the
/// lock's own rules, and hands decisions to the `LockController` (which journals each one
/// before the actuator moves). A link, by itself, never moves the lock. The work is its
/// components' (`LockComponents` builds and wires them); the agent routes the manager's
/// callbacks and the daemon's calls to them.
public final class LockAgent: PeripheralManagerDelegate {
    public let configuration: LockAgentConfiguration
    public let peripheral: PeripheralManager
    public let controller: LockController
    let log: any LockEventLog
    let events: any AgentEventSink
    /// The lock's components, wired to each other (`LockComponents`).
    let parts: LockComponents
    var loop: any EventLoop { peripheral.transport.loop }

    /// Requests the system refused since start (each asked again by the transport).
    public internal(set) var transportRefusals = 0
    /// Software-path latencies (command received → actuator line changed), in ms.
    public var commandLatencies: [Double] { parts.pipeline.commandLatencies }
    /// The wake-up work this agent marks: an accepted command until the controller is at
    /// rest again (decision journalled, actuator moved, outcome journalled, logged and
    /// notified), so that a background wake-up for the write is timed to its end.
    /// The runtime attaches the application gate.
    public let backgroundTasks: BackgroundTasks

    /// `lockout` keeps the failed-attempt counts: the daemon passes the SQLite store (the
    /// in-memory default is for tests; docs/LOCK-RULES.md rule 5 wants them to survive restarts).
    public init(transport: any BluetoothTransport, controller: LockController, keys: any KeyStore,
                log: any LockEventLog, events: any AgentEventSink, configuration: LockAgentConfiguration = .init(),
                outputClock: OutputChangeClock? = nil, lockout: any LockoutStore = InMemoryLockoutStore(),
                pairing: PairingResponder? = nil, restoration: (any RestorationStorage)? = nil,
                operatingModes: (any OperatingModeStore)? = nil) {
        self.configuration = configuration
        self.controller = controller
        self.log = log
        self.events = events
        let backgroundTasks = BackgroundTasks()
        self.backgroundTasks = backgroundTasks
        // The Generic Access service names the lock as it advertises itself, and says it is a
        // door lock (Appearance 0x0708), for the Bluetooth settings of the phones around it.
        let peripheral = PeripheralManager(transport: transport, options: ManagerOptions(
            restoreIdentifier: configuration.restoreIdentifier, restorationStorage: restoration),
            genericAccess: GenericAccess(deviceName: configuration.name, appearance: .doorLock))
        self.peripheral = peripheral
        parts = LockComponents(peripheral: peripheral, controller: controller, keys: keys, log: log, events: events,
                               configuration: configuration, outputClock: outputClock, lockout: lockout, pairing: pairing,
                               restoration: restoration, operatingModes: operatingModes, backgroundTasks: backgroundTasks)
        peripheral.delegate = self
    }

    /// Reads the sensors and reconciles with the interrupted decision (if any), then publishes.
    public func start(recovered: LockDecision?) {
        if let recovered {
            emit(.lockRecovering(decision: recovered.id.rawValue, operation: .init(recovered.operation)))
        }
        let demoted = parts.modeKeeper.restoreAtStart()
        controller.start(recovered: recovered, lastLogged: parts.recorder.lastLoggedLockState())
        if let demoted { parts.modeKeeper.logDemotion(from: demoted) }
        emit(.lockStarted(state: .init(controller.lockState), door: .init(controller.doorState)))
    }

    /// Called with each lock event once it is in the audit log (the runtime's alarm hook).
    public var onLogged: ((LockEvent) -> Void)? {
        get { parts.recorder.onLogged }
        set { parts.recorder.onLogged = newValue }
    }

    public var statusFrame: LockStatusFrame { parts.statusFrame }

    // MARK: PeripheralManagerDelegate

    public func peripheralManagerDidUpdateState(_ pm: PeripheralManager) {
        emit(.lockRadio(state: .init(pm.state)))
        parts.published.radioChanged()
    }

    public func peripheralManagerDidStartAdvertising(_ pm: PeripheralManager, error: BluetoothError?) {
        emit(.lockAdvertising(error: error.map { "\($0)" }))
    }

    public func peripheralManager(_ pm: PeripheralManager, didConnect central: Central) {
        parts.lifecycle.connected(central)
    }

    public func peripheralManager(_ pm: PeripheralManager, didDisconnect central: Central, reason: DisconnectReason) {
        parts.lifecycle.disconnected(central, reason: reason)
    }

    public func peripheralManager(_ pm: PeripheralManager, didReceiveRead request: ReadRequest) -> Result<[UInt8], ATTErrorCode> {
        parts.requests.read(request.characteristic.uuid, by: request.central)
    }

    public func peripheralManager(_ pm: PeripheralManager, didReceiveWrite request: WriteRequest) -> ATTErrorCode? {
        parts.requests.write(request.value, to: request.characteristic.uuid, withResponse: request.withResponse, by: request.central)
    }

    /// The lock state and the log are for a link with a session only (docs/SECURITY.md,
    /// "Sessions"): a stranger's subscription is refused with an application error, like its reads.
    public func peripheralManager(_ pm: PeripheralManager, central: Central,
                                  shouldSubscribeTo characteristic: LocalCharacteristic) -> ATTErrorCode? {
        parts.lifecycle.subscriptionRefusal(central, forSessions: parts.published.isForSessions(characteristic))?.attError
    }

    /// A subscription to the lock state by a link with a session hears the state at once.
    public func peripheralManager(_ pm: PeripheralManager, central: Central,
                                  didSubscribeTo characteristic: LocalCharacteristic) {
        parts.lifecycle.subscribed(central, toState: parts.published.isState(characteristic))
    }

    public func peripheralManagerIsReady(toUpdateSubscribers pm: PeripheralManager) {
        parts.status.roomAgain()
        parts.logTransfer.pump()
    }

    func emit(_ event: Event) {
        events.emit(AgentEvent(event, time: loop.now))
    }
}
