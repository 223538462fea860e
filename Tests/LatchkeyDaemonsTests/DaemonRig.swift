#if canImport(Glibc)
import Glibc
#endif
import LatchkeyAgents
import LatchkeyEvents
import LatchkeyLock
import LatchkeyLockAgent
import LatchkeyPhoneAgent
import LatchkeyPosix
@testable import LatchkeyControl
@testable import LatchkeyDaemons
@testable import LatchkeyDemo
import LatchkeySecurity
@testable import LatchkeySettings
import LatchkeySimAir
import LatchkeySimGPIO
import LatchkeyTransport

/// The lock and phone daemons as `latchkey lock` / `latchkey phone` set them up — from
/// configuration files like the demo's, with SQLite stores, a file-backed GPIO chip, their
/// control sockets and signal handlers — plus the simulated air (`latchkey air`), all on
/// one real-time loop in this process, in a scratch directory. Every wait runs the loop
/// until a condition, bounded; nothing sleeps.
final class DaemonRig {
    static let lockAddress = BluetoothAddress(0xC0FFEE000001)
    static let phoneAddress = BluetoothAddress(0xC0FFEE000002)
    /// Generous against a loaded machine; reached only when something is wrong.
    static let patience = Duration.seconds(10)

    let loop = PosixEventLoop()
    let directory: String
    let air: AirServer
    private(set) var lock: RunningAgent<LockAgent>?
    private(set) var phone: RunningAgent<PhoneAgent>?
    private(set) var lockEvents: [AgentEvent] = []
    /// Who the daemons' control sockets see connecting: the kernel's answer unless a test
    /// plays another user (ControlPeerAttackTests).
    var peers = ControlPeerIdentification.kernel
    /// Whether the daemons install their signal handlers (SIGTSTP, SIGCONT, SIGCHLD). A signal's
    /// disposition is process-wide and suites run in parallel: only a suite that sends signals
    /// (DaemonControlTests, serialized) asks for them, so no other rig takes them from it or
    /// restores the default (which would stop the whole test process on SIGTSTP).
    private(set) var phoneEvents: [AgentEvent] = []

    var lockState: String { directory + "/lock-state" }
    var phoneState: String { directory + "/phone-state" }

    let ownsSignals: Bool

    init(ownsSignals: Bool = false) throws {
        self.ownsSignals = ownsSignals
        directory = try RuntimeDirectory.makeTemporary(prefix: "latchkey-daemons")
        air = AirServer(socketPath: directory + "/air.sock", loop: loop, seed: 1, range: 10)
        try air.start()
        for dir in [lockState, phoneState, directory + "/gpio"] { mkdir(dir, 0o700) }
        try FileGPIOChip.create(at: directory + "/gpio/rig-lock", label: "rig-lock",
                                lineNames: ["motor_unlock", "motor_lock", "door", "button"])
        let secret = CommandSealing.newSecret()
        try StateStores.openKeys(lockState).add(PhoneKey(id: 1, name: "rig-phone", secret: secret, role: .user))
        try writeSecretFile(phoneState + "/key.hex", secret)
        try writeFile(directory + "/lock.yaml", """
            name: Rig Door
            transport: sim
            sim:
              air_socket: \(directory)/air.sock
              address: "\(Self.lockAddress)"
              position: 0
            state_directory: \(lockState)
            gpio:
              simulated_chip_root: \(directory)/gpio
              chip: rig-lock
              actuator: motor
              motor_run_ms: 300
              unlock_line: motor_unlock
              lock_line: motor_lock
              door_line: door
              button_line: button
            """)
        try writeFile(directory + "/phone.yaml", """
            transport: sim
            sim:
              air_socket: \(directory)/air.sock
              address: "\(Self.phoneAddress)"
              position: 1
            state_directory: \(phoneState)
            lock_address: "\(Self.lockAddress)"
            key_id: 1
            key_secret_file: \(phoneState)/key.hex
            grace_seconds: 2
            """)
    }

    /// The user the rig's configurations name as `bridge_user` (`connectAsTheBridge`): one
    /// every Debian system has.
    static let bridgeUser = "nobody"
    /// Its uid, from the user database as the daemons resolve it.
    static var bridgeUserID: UInt32 {
        guard case .found(let user) = BridgeUser.lookUp(bridgeUser) else { fatalError("no user \(bridgeUser) here") }
        return user.uid
    }

    /// Both configurations name `bridgeUser` as `bridge_user`, and the daemons' sockets see
    /// every connection as that user: the MQTT bridge as under systemd, restricted to what it
    /// needs (docs/SECURITY.md, "Control sockets"). Before the daemons start.
    func connectAsTheBridge() throws {
        try addToLockConfig("bridge_user: \(Self.bridgeUser)")
        try addToPhoneConfig("bridge_user: \(Self.bridgeUser)")
        connect(asUID: Self.bridgeUserID)
    }

    /// The daemons' sockets see every connection as user `uid` (pid 1).
    func connect(asUID uid: UInt32) {
        peers = ControlPeerIdentification(agentUserID: PeerCredentials.currentUserID) { _ in
            .success(PeerCredentials(pid: 1, uid: uid, gid: uid))
        }
    }

    /// The MQTT bridge's key (role user) in the lock's store, and `bridge_key_id` naming it,
    /// with `more` lines of lock.yaml (before `startLock`).
    func addBridgeKey(_ id: UInt32 = 9, more: String = "") throws {
        try StateStores.openKeys(lockState).add(PhoneKey(id: id, name: "mqtt-bridge", secret: CommandSealing.newSecret(),
                                                         role: .user))
        try addToLockConfig("bridge_key_id: \(id)" + (more.isEmpty ? "" : "\n" + more))
    }

    /// Adds top-level fields to lock.yaml (before `startLock`), e.g. "bridge_key_id: 9".
    func addToLockConfig(_ lines: String) throws {
        try writeFile(directory + "/lock.yaml", try readTextFile(directory + "/lock.yaml") + "\n" + lines + "\n")
    }

    /// Adds top-level fields to phone.yaml (before `startPhone`).
    func addToPhoneConfig(_ lines: String) throws {
        try writeFile(directory + "/phone.yaml", try readTextFile(directory + "/phone.yaml") + "\n" + lines + "\n")
    }

    /// `latchkey lock --config lock.yaml`, without its run loop (the test runs the loop).
    func startLock() throws {
        let settings = try LockSettings.load(try AgentProcesses.loadConfig(directory + "/lock.yaml"))
        let printer = EventPrinter(format: .json, output: nil)
        printer.onEvent = { [unowned self] in lockEvents.append($0) }
        lock = try LockDaemon.start(settings, on: loop, printer: printer, logger: .quiet, peers: peers, ownsSignals: ownsSignals)
    }

    /// `latchkey phone --config phone.yaml`, without its run loop.
    func startPhone() throws {
        let settings = try PhoneSettings.load(try AgentProcesses.loadConfig(directory + "/phone.yaml"))
        let printer = EventPrinter(format: .json, output: nil)
        printer.onEvent = { [unowned self] in phoneEvents.append($0) }
        phone = try PhoneDaemon.start(settings, on: loop, printer: printer, logger: .quiet, peers: peers, ownsSignals: ownsSignals)
    }

    /// Both daemons, the phone at home and its GATT setup on the lock done.
    func startLinked() throws {
        try startLock()
        try startPhone()
        // Linked means the phone has proven the lock on its link (a sealed reply opened): home.
        guard wait(until: { !phoneEvents(EventKind.phoneGattReady.name).isEmpty && !phoneEvents(EventKind.phoneLinkVerified.name).isEmpty }) else {
            throw RuntimeError("the phone never got ready: \(phoneEvents.map(\.name))")
        }
    }

    /// Runs the loop until `condition` holds; false when `patience` ran out first.
    @discardableResult
    func wait(until condition: () -> Bool) -> Bool {
        (try? loop.run(until: condition, timeout: Self.patience)) ?? false
    }

    /// What `latchkey phone-ctl` / `lock-ctl` does: one command over the agent's control
    /// socket, every reply line until the final "ok" or "error".
    func send<A: AnyObject>(_ command: String, to agent: RunningAgent<A>?) throws -> [String] {
        var lines: [String] = []
        var done = false
        let channel = try LocalControlClient.send(command, to: agent?.controlPath ?? "/nonexistent", on: loop,
                                                  line: { lines.append($0) }, done: { _ in done = true })
        defer { channel.close() }
        guard wait(until: { done }) else { throw RuntimeError("no answer to \(command): \(lines)") }
        return lines
    }

    func phoneEvents(_ name: String, since mark: Int = 0) -> [AgentEvent] {
        phoneEvents.dropFirst(mark).filter { $0.name == name }
    }

    func lockEvents(_ name: String, since mark: Int = 0) -> [AgentEvent] {
        lockEvents.dropFirst(mark).filter { $0.name == name }
    }

    var phoneController: SimulatedControllerView { SimulatedControllerView(air: air, address: Self.phoneAddress) }
    var lockController: SimulatedControllerView { SimulatedControllerView(air: air, address: Self.lockAddress) }

    /// Closes both daemons (signals back to their defaults), the air, and the directory.
    func close() {
        phone?.close()
        lock?.close()
        air.stop()
        removeTree(directory)
    }

}

/// What the air (the "system") holds for one device, looked up each time.
struct SimulatedControllerView {
    let air: AirServer
    let address: BluetoothAddress
    var isAdvertising: Bool { air.controller(address)?.isAdvertising ?? false }
    var advertisedName: String? { air.controller(address)?.advertisement?.data.localName }
    var connectionParameters: ConnectionParameters? { air.controller(address)?.connectionParameters }
    var isLinked: Bool { !(air.controller(address)?.connectedLinks.isEmpty ?? true) }
    var pendingConnections: Set<BluetoothAddress> { air.controller(address)?.pendingConnections ?? [] }
}
