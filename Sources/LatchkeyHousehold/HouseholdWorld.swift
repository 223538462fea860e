#if canImport(Glibc)
import Glibc
#endif
import LatchkeyAgents
import LatchkeyBridge
import LatchkeyControl
import LatchkeyDaemons
import LatchkeyEvents
import LatchkeyGPIO
import LatchkeyLock
import LatchkeyMQTT
import LatchkeyPhoneAgent
import LatchkeySecurity
import LatchkeySettings
import LatchkeySim
import LatchkeySimDisk
import LatchkeySimGPIO
import LatchkeySimMQTT
import LatchkeyStore
import LatchkeyTransport
import Logging

/// Where everything of one household lives: one manual loop, one air, the lock's card and
/// each phone's storage (a `SimulatedDisk` under each SQLite store), the broker; the lock, the owner's phone, this
/// month's guest's phone and the MQTT bridge as processes on that loop, each killed and
/// started again from its files. Everything a step does goes through the agents' public
/// faces: the daemons' wiring, their control commands, the radio, the chip's lines, the
/// broker's topics.
final class HouseholdWorld {
    static let lockAddress = BluetoothAddress(0xC0FFEE000001)
    static let ownerAddress = BluetoothAddress(0xC0FFEE000002)
    static let guestAddress = BluetoothAddress(0xC0FFEE000003)
    static let strangerAddress = BluetoothAddress(0xBADBAD000001)
    /// Out of everyone's range: where the stranger waits between visits.
    static let elsewhere = 5000.0
    /// Where the stranger stands during a visit: in range of the door.
    static let strangerAtDoor = 3.0
    static let ownerKey: UInt32 = 1
    static let bridgeKey: UInt32 = 2
    static let prefix = "latchkey/front-door"
    static let home = 1.0, away = 1000.0
    /// Unix time of simulated instant zero (the lock's wall clock adds its steps to it).
    static let epoch: Int64 = 1_767_225_600_000_000_000

    let loop = ManualEventLoop()
    let air: SimulatedAir
    let disk: SimulatedDisk
    /// The owner's phone's storage, and the guest's phone's (one phone, a fresh state
    /// directory for each month's guest): each fails on its own (`HouseholdPhoneFaults`).
    let ownerDisk: SimulatedDisk
    let guestDisk: SimulatedDisk
    /// The phones that are powered off now (`phonePowerCut`): nothing starts them till power is back.
    var phonesPoweredOff: Set<BluetoothAddress> = []
    let broker: SimulatedBroker
    let judge: HouseholdJudge
    let directory: String
    let trace: Trace
    /// The lock's wall clock minus the true time (steps forwards and backwards).
    var wallOffset: Int64 = 0
    private let logger = Logger(label: "latchkey-sim") { _ in SwiftLogNoOpLogHandler() }

    // The processes, nil while down.
    private(set) var lock: LockProcess?
    private(set) var owner: PhoneProcess?
    private(set) var guest: PhoneProcess?
    private(set) var bridge: BridgeProcess?
    /// The door's and the button's physical state: kept across the lock process's lives.
    private(set) var doorOpen = false
    private(set) var buttonPressed = false
    private(set) var ownerHome = true
    var guestKey: UInt32?
    private(set) var guestHome = false
    /// The number of the next guest (its phone's state directory and its key's name).
    var nextGuest = 100
    private var homeAssistant: SimulatedMQTTConnection
    private var homeAssistantDelegate: HomeAssistant?
    private var commandNumber = 0
    /// How many of each kind of step and outcome were played (the report's counts).
    var counts: [String: Int] = [:]
    /// Planted (the self-test): the next rise of the unlock line is reported twice, 100 ms
    /// apart, inside its decision's window, as a drive retried by the lock would look.
    var doubleNextRise = false
    /// Planted (the self-test): memory kept at every sample from now on.
    var leaking = false
    /// Planted (the self-test): the stranger's next answer is reported as accepted.
    var strangerLies = false
    private var stranger: HouseholdStranger?
    /// The lock's and the owner's phone's radios, as their agents see them: they refuse
    /// requests during a refusal spell (`refuseRadio`).
    let lockRadio: RefusingRadio
    let ownerRadio: RefusingRadio
    /// The guest's phone's radio: it refuses as the owner's does (spells from its kills and power-ons).
    let guestRadio: RefusingRadio
    /// The relay while one is at work (the owner's phone is then on its street).
    var relay: HouseholdRelay?
    /// The lock has seen the owner's phone leave, and not come back since, in this process's
    /// life (what an arrival needs).
    private(set) var lockSawOwnerLeave = false
    /// Control writes overheard between the owner's phone and the lock (the latest few).
    private var overheard: [[UInt8]] = []

    var lockState: String { directory + "/lock" }
    var ownerState: String { directory + "/owner" }
    var guestState: String { directory + "/guest" }
    /// This month's guest's phone's state directory.
    var guestDirectory: String?
    /// Each agent's random octets, drawn from the seed (`RandomSource.seeded`): a restarted
    /// agent goes on with its stream, as a real one draws fresh octets. A new guest's phone
    /// gets its own (`guestPairs`); the stranger's forgeries and pairing requests theirs.
    let seed: UInt64
    let lockRandom: RandomSource, ownerRandom: RandomSource, strangerRandom: RandomSource
    var guestRandom: RandomSource
    /// Whether a pairing window is open on the lock (its `pair` command said so, and has not ended).
    var pairingWindowOpen = false

    /// The lock's configured `lock.log_retention_events`.
    let logRetention: Int
    /// Planted (the self-test): the lock's log opened with this retention instead.
    var plantedLogRetention: Int?

    init(seed: UInt64, directory: String, judge: HouseholdJudge, trace: Trace, logRetention: Int? = nil) throws {
        self.directory = directory
        self.logRetention = logRetention ?? StoredEventLog.defaultRetention
        self.judge = judge
        self.trace = trace
        self.seed = seed
        lockRandom = .seeded(seed ^ 0x10C4)
        ownerRandom = .seeded(seed ^ 0x0111E4)
        strangerRandom = .seeded(seed ^ 0x57A4)
        guestRandom = .seeded(seed ^ 0x6E57)
        air = SimulatedAir(loop: loop, seed: seed)
        _ = air.addDevice(address: Self.lockAddress, position: 0)
        _ = air.addDevice(address: Self.ownerAddress, position: Self.home)
        _ = air.addDevice(address: Self.guestAddress, position: Self.away)
        _ = air.addDevice(address: Self.strangerAddress, position: Self.elsewhere)
        disk = SimulatedDisk(seed: seed)
        ownerDisk = SimulatedDisk(seed: seed ^ 0x0_0E4E_D15C)
        guestDisk = SimulatedDisk(seed: seed ^ 0x6_0E57_D15C)
        lockRadio = RefusingRadio(air.device(Self.lockAddress)!)
        ownerRadio = RefusingRadio(air.device(Self.ownerAddress)!)
        guestRadio = RefusingRadio(air.device(Self.guestAddress)!)
        broker = SimulatedBroker(loop: loop)
        broker.keepsPublished = false  // the judge reads what Home Assistant receives instead
        homeAssistant = broker.connection(MQTTEndpoint(host: "sim", port: 1, clientID: "home-assistant"))
        for dir in [lockState, ownerState] { mkdir(dir, 0o700) }
        // The owner's key (admin, arrival unlock allowed) and the bridge's (a user key, as the
        // bridge's key rule asks), made as `latchkey keys add` would.
        let ownerSecret = Self.secret(seed, 1)
        do {
            let keys = try StateStores.openKeys(lockState)
            try keys.add(PhoneKey(id: Self.ownerKey, name: "owner", secret: ownerSecret, role: .admin,
                                  mayRequestArrivalUnlock: true))
            try keys.add(PhoneKey(id: Self.bridgeKey, name: "home-assistant", secret: Self.secret(seed, 2), role: .user))
        }
        try writeSecretFile(ownerState + "/key.hex", ownerSecret)
        try Self.writeFile(directory + "/lock.yaml", """
            name: Front Door
            transport: sim
            sim:
              air_socket: \(directory)/unused.sock
              address: "\(Self.lockAddress)"
            state_directory: \(lockState)
            bridge_key_id: \(Self.bridgeKey)
            gpio:
              chip: door
              actuator: motor
              motor_run_ms: 300
              unlock_line: motor_unlock
              lock_line: motor_lock
              door_line: door
              button_line: button
            lock:
              auto_relock_seconds: 30
            """ + (logRetention.map { "\n  log_retention_events: \($0)" } ?? ""))
        try writePhoneConfig(ownerState, key: Self.ownerKey, address: Self.ownerAddress)
        let ha = HomeAssistant(world: self)
        homeAssistantDelegate = ha
        homeAssistant.delegate = ha
        homeAssistant.connect()
        for (radio, whose) in [(lockRadio, "lock"), (ownerRadio, "phone"), (guestRadio, "guest phone")] {
            radio.refused = { [unowned self] refusal in
                let what: String
                if case .pendingConnection = refusal.request { what = "pending connection" } else { what = "\(refusal.request)" }
                count("\(whose) radio refused \(what)")
                trace.add("\(whose) radio: \(refusal)", loop.now)
            }
        }
        // Every PDU on the air goes into the trace's hash (challenges, nonces, sealed frames: a
        // replay must draw the same octets). A sniffer beside the door keeps the owner's
        // writes to the lock, for the stranger to replay.
        air.sniffer = { [unowned self] from, to, pdu in
            trace.fold(pdu)
            guard from == Self.ownerAddress, to == Self.lockAddress,
                  let value = HouseholdStranger.writeValue(ofPDU: pdu) else { return }
            overheard.append(value)
            if overheard.count > 8 { overheard.removeFirst() }
        }
    }

    /// Secrets drawn from the seed, so that a replay holds the same keys.
    static func secret(_ seed: UInt64, _ n: UInt64) -> [UInt8] {
        var random = SplitMix64(seed: seed &+ n &* 0x9E37_79B9_7F4A_7C15)
        return (0..<4).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }
    }

    /// With no `key`, the phone uses the key file `latchkey phone pair` wrote in `state`.
    func writePhoneConfig(_ state: String, key: UInt32?, address: BluetoothAddress) throws {
        try Self.writeFile(state + "/phone.yaml", """
            transport: sim
            sim:
              air_socket: \(directory)/unused.sock
              address: "\(address)"
            state_directory: \(state)
            lock_address: "\(Self.lockAddress)"
            """ + (key.map { "\nkey_id: \($0)\nkey_secret_file: \(state)/key.hex\n" } ?? "\n"))
    }

    static func writeFile(_ path: String, _ text: String) throws {
        guard let f = fopen(path, "w") else { throw RuntimeError("cannot write \(path)") }
        fputs(text, f)
        fclose(f)
    }

    var wallClock: WallClock {
        WallClock { [unowned self] in Self.epoch + self.loop.now.nanoseconds + self.wallOffset }
    }

    /// Home Assistant's clock: the true time (the lock's may be stepped).
    var trueWallSeconds: Double { Double(Self.epoch + loop.now.nanoseconds) / 1e9 }

    func count(_ kind: String, _ n: Int = 1) { counts[kind, default: 0] += n }

    // MARK: The lock process

    final class LockProcess {
        let loop: ProcessLoop
        let wired: WiredLock
        let stores: LockStores
        let chip: SimulatedGPIOChip
        var journal: StoredDecisionJournal? { (stores.journal as? StoredLockRecords)?.journal }
        var keys: StoredKeyStore? { stores.store?.keyStore() }
        var log: StoredEventLog? { (stores.journal as? StoredLockRecords)?.log }
        init(loop: ProcessLoop, wired: WiredLock, stores: LockStores, chip: SimulatedGPIOChip) {
            self.loop = loop; self.wired = wired; self.stores = stores; self.chip = chip
        }
    }

    private var lockSettings: LockSettings?

    /// Starts the lock as its unit would: the card back (after a crash), the store opened
    /// through the simulated disk, the daemon's wiring on a fresh process loop and chip.
    /// A start that fails is tried again 10 s later (the unit's Restart=).
    func startLock() {
        guard lock == nil else { return }
        do {
            if disk.state == .crashed { try disk.restart() }
            var settings = try lockSettings ?? LockSettings.load(try AgentProcesses.loadConfig(directory + "/lock.yaml"))
            settings.agent.random = lockRandom
            lockSettings = settings
            let process = ProcessLoop(loop)
            let chip = SimulatedGPIOChip(label: "door", lineNames: ["motor_unlock", "motor_lock", "door", "button"],
                                         loop: process)
            chip.pull("door", high: doorOpen)
            chip.pull("button", high: buttonPressed)
            let watched = WatchedChip(chip, line: "motor_unlock") { [weak self] in
                guard let self else { return }
                self.judge.rise(at: self.loop.now)
                self.trace.add("rise", self.loop.now)
                if self.doubleNextRise {
                    self.doubleNextRise = false
                    self.loop.schedule(after: .milliseconds(100)) { [weak self] in
                        guard let self else { return }
                        self.judge.rise(at: self.loop.now)
                    }
                }
            }
            let disk = disk
            let stores = try StateStores.openLock(settings.stateDirectory, loop: process, wallClock: wallClock,
                                                  fileSystem: StoreFileSystem.readOnly(while: { disk.isReadOnly })
                                                      .through(sqliteVFS: disk.vfsName),
                                                  logRetention: plantedLogRetention ?? settings.logRetention
                                                      ?? StoredEventLog.defaultRetention,
                                                  random: lockRandom)
            let sink = Sink { [weak self] in self?.lockEvent($0) }
            let wired = try WiredLock(settings, stores: stores, transport: lockRadio,
                                      chips: GPIOChipSet([watched]), loop: process, events: sink, logger: logger)
            judge.lockStarted(at: loop.now, foundOpen: stores.interrupted?.id.rawValue)
            lockSawOwnerLeave = false  // the lock keeps the departures it saw in memory only
            wired.start()
            let started = LockProcess(loop: process, wired: wired, stores: stores, chip: chip)
            lock = started
            if let journal = started.journal { judge.checkSurvivors(journal: journal, now: loop.now) }
            judge.relinkClockRestarts(at: loop.now)
            trace.add("lock started", loop.now)
        } catch {
            count("lock start failed")
            trace.add("lock start failed: \(error)", loop.now)
            loop.schedule(after: .seconds(10)) { [weak self] in self?.startLock() }
        }
    }

    /// SIGKILL, or the power: no cleanup; its lines revert with it, its links stay (a kill)
    /// until the controller's unclaimed-link rule drops them.
    func killLock(powerCut: Bool) {
        guard let process = lock else { return }
        lockRadio.detachApplication()
        process.loop.kill()
        if powerCut { disk.cutPower() } else { disk.killProcess() }
        // The dead process's connections: the kernel closes its descriptors. An error of this
        // close (its checkpoint on a dead disk) has nobody to tell, as with a SIGKILL.
        try? process.stores.store?.close()
        lock = nil
        bridge?.link.lockWentDown()
        trace.add(powerCut ? "lock lost power" : "lock killed", loop.now)
    }

    private func lockEvent(_ event: AgentEvent) {
        trace.add(event.name, event.time)
        if event.name == EventKind.lockArrivalRefused.name { count("arrival refused (\(event.field("reason") ?? "?"))") }
        if event.name == EventKind.lockDeparture.name, event.field("key").flatMap({ Self.number(after: "", in: $0) }) == UInt64(Self.ownerKey) {
            count("owner's departure seen by the lock")
            lockSawOwnerLeave = true
        }
        if event.name == EventKind.lockPhonePresent.name, event.field("key").flatMap({ Self.number(after: "", in: $0) }) == UInt64(Self.ownerKey) {
            lockSawOwnerLeave = false
        }
        if event.name == EventKind.lockCommandAccepted.name, let decision = event.field("decision").flatMap({ UInt64($0) }) {
            judge.announced(decision: decision, key: event.field("key").flatMap { Self.number(after: "", in: $0) }.map(UInt32.init),
                            at: event.time)
        }
    }

    // MARK: Phones

    final class PhoneProcess {
        let loop: ProcessLoop
        let wired: WiredPhone
        let key: UInt32
        let address: BluetoothAddress
        /// Its store, on its disk: closed when the process dies.
        let store: AgentStore
        init(loop: ProcessLoop, wired: WiredPhone, key: UInt32, address: BluetoothAddress, store: AgentStore) {
            self.loop = loop; self.wired = wired; self.key = key; self.address = address; self.store = store
        }
    }

    func startPhone(guest isGuest: Bool, transport given: (any BluetoothTransport)? = nil) {
        if isGuest ? guest != nil : owner != nil { return }
        if isGuest && guestKey == nil { return }
        guard let state = isGuest ? guestDirectory : ownerState else { return }
        let address = isGuest ? Self.guestAddress : Self.ownerAddress
        guard !phonesPoweredOff.contains(address) else { return }
        let disk = isGuest ? guestDisk : ownerDisk
        do {
            if disk.state == .crashed { try disk.restart() }
            let settings = try PhoneSettings.load(try AgentProcesses.loadConfig(state + "/phone.yaml"))
            let opened = try StateStores.openPhoneStore(settings.stateDirectory, wallClock: wallClock,
                                                        fileSystem: StoreFileSystem.readOnly(while: { disk.isReadOnly })
                                                            .through(sqliteVFS: disk.vfsName))
            let whose = isGuest ? "guest phone" : "owner phone"
            let store = CountedPhoneStore(opened.phoneStateStore()) { [weak self] in self?.count("\(whose) state not saved") }
            let restoration = opened.restorationStorage()
            let process = ProcessLoop(loop)
            let sink = Sink { [weak self] in self?.phoneEvent($0, guest: isGuest) }
            // While a relay is at work the owner's phone is where the relay's far radio is.
            let transport: any BluetoothTransport = given ?? (isGuest ? guestRadio : relay?.phoneTransport ?? ownerRadio)
            let wired = try WiredPhone(settings, key: try PhoneDaemon.key(settings), store: store,
                                       restoration: restoration, transport: transport, loop: process,
                                       events: sink, logger: logger, random: isGuest ? guestRandom : ownerRandom)
            let started = PhoneProcess(loop: process, wired: wired, key: isGuest ? guestKey! : Self.ownerKey,
                                       address: address, store: opened)
            if isGuest { guest = started } else { owner = started; judge.relinkClockRestarts(at: loop.now) }
            judge.phoneStarted(key: started.key)
            trace.add(isGuest ? "guest phone started" : "owner phone started", loop.now)
        } catch {
            count("phone start failed" + (disk.isReadOnly ? " (its disk read-only)" : disk.isFull ? " (its disk full)" : ""))
            trace.add("phone start failed: \(error)", loop.now)
            loop.schedule(after: .seconds(10)) { [weak self] in self?.startPhone(guest: isGuest) }
        }
    }

    /// SIGKILL, or the phone's power (`powerCut`: its disk loses what was not synced).
    func killPhone(guest isGuest: Bool, powerCut: Bool = false) {
        guard let process = isGuest ? guest : owner else { return }
        if isGuest { guestRadio.detachApplication() }
        else if let relay { relay.phoneTransport.detachApplication() } else { ownerRadio.detachApplication() }
        process.loop.kill()
        let disk = isGuest ? guestDisk : ownerDisk
        if powerCut { disk.cutPower() } else { disk.killProcess() }
        // As the lock's: the kernel closes a dead process's descriptors; nobody hears of an error.
        try? process.store.close()
        if isGuest { guest = nil } else { owner = nil }
        trace.add(isGuest ? "guest phone killed" : "owner phone killed", loop.now)
    }

    private func phoneEvent(_ event: AgentEvent, guest isGuest: Bool) {
        trace.add((isGuest ? "guest " : "owner ") + event.name, event.time)
        if !isGuest && event.name == EventKind.phoneGattReady.name { judge.phoneReady(at: event.time) }
        if event.name == EventKind.phoneCommandSent.name, let counter = event.field("counter").flatMap({ UInt64($0) }),
           let key = isGuest ? guestKey : Self.ownerKey {
            judge.phoneSent(key: key, counter: counter, at: event.time)
        }
        if event.name == EventKind.phoneLinked.name { count(isGuest ? "guest phone linked" : "owner phone linked") }
    }

    /// Whether the owner's phone could link now: both agents up, the phone in range, its disk
    /// taking writes (a phone that cannot save a counter cannot prove itself, and backs off).
    var relinkPossible: Bool { lock != nil && owner != nil && ownerHome && !ownerDisk.isReadOnly && !ownerDisk.isFull }

    // MARK: What people do

    func move(owner home: Bool) {
        ownerHome = home
        air.setPosition(home ? Self.home : Self.away, of: Self.ownerAddress)
        if home { judge.phoneReturned(at: loop.now) } else { judge.phoneLeft() }
        count(home ? "return" : "departure")
    }

    func moveGuest(home: Bool) {
        guestHome = home
        air.setPosition(home ? Self.home : Self.away, of: Self.guestAddress)
    }

    /// `phone-ctl arriving` (the geofence's hook): the phone says it is coming home.
    func arrivalIntent() {
        guard let phone = owner else { return }
        phone.wired.dispatcher.handle(["arriving"]) { _ in }
        count("arrival intent")
    }

    /// `phone-ctl unlock|lock` on a phone: its answer goes to the judge.
    func tap(_ operation: LockOperationType, guest isGuest: Bool) {
        guard let phone = isGuest ? guest : owner else { return }
        let sent = loop.now, key = phone.key
        let word = operation == .unlock ? "unlock" : "lock"
        count(isGuest ? "guest tap" : "tap")
        phone.wired.dispatcher.handle([word]) { [weak self] line in
            guard let self, line.hasPrefix("ok") || line.hasPrefix("error") else { return }
            let ok = line.hasPrefix("ok")
            self.count(ok ? "tap answered ok" : "tap refused")
            self.judge.phoneAnswered(key: key, operation: operation, ok: ok, sent: sent, at: self.loop.now)
        }
    }

    func pressButton() {
        buttonPressed = true
        lock?.chip.pull("button", high: true)
        loop.schedule(after: .milliseconds(250)) { [weak self] in
            guard let self else { return }
            self.buttonPressed = false
            self.lock?.chip.pull("button", high: false)
        }
        count("button press")
    }

    func cycleDoor(openFor: Duration) {
        doorOpen = true
        lock?.chip.pull("door", high: true)
        loop.schedule(after: openFor) { [weak self] in
            guard let self else { return }
            self.doorOpen = false
            self.lock?.chip.pull("door", high: false)
        }
        count("door cycle")
    }

    /// Home Assistant publishes a command on the lock's `set` topic, stamped with the true time.
    func mqttCommand(_ operation: LockOperationType) {
        commandNumber += 1
        let action = operation == .unlock ? "unlock" : "lock"
        let body = "{\"action\":\"\(action)\",\"ts\":\(trueWallSeconds),\"id\":\"c\(commandNumber)\"}"
        count("mqtt command")
        guard homeAssistant.isConnected else { count("mqtt command not sent (broker down)"); return }
        do { _ = try homeAssistant.publish(MQTTMessage(topic: Self.prefix + "/set", text: body, qos: 1)) } catch {
            count("mqtt command not sent (publish refused)")
        }
    }

    func homeAssistantReceived(_ message: MQTTMessage) {
        let text = message.text
        if message.topic == Self.prefix + "/events" {
            if let seq = Self.number(after: "\"seq\":", in: text) {
                judge.brokerEvent(sequence: seq, at: loop.now) { [weak self] in
                    guard let self, let log = self.lock?.log else { return .none }
                    // An unreadable log cannot explain a gap: counted as with the lock down.
                    do { return .some(try log.read(from: 0, limit: 1).first?.sequence) } catch {
                        self.count("broker gap not judged (the lock's log unreadable)")
                        return .none
                    }
                }
            }
        } else if message.topic == Self.prefix + "/result" {
            count(text.contains("\"ok\":true") ? "mqtt command accepted" : "mqtt command refused")
            if let decision = Self.number(after: "decision=", in: text) {
                judge.announced(decision: decision, key: Self.bridgeKey, at: loop.now)
            }
        }
    }

    static func number(after marker: String, in text: String) -> UInt64? {
        let t = Array(text.utf8), m = Array(marker.utf8)
        guard t.count >= m.count else { return nil }
        for start in 0...(t.count - m.count) where Array(t[start..<(start + m.count)]) == m {
            let digits = t[(start + m.count)...].prefix { $0 >= 48 && $0 <= 57 }
            return UInt64(String(decoding: digits, as: UTF8.self))
        }
        return nil
    }

    func homeAssistantConnected() {
        for topic in ["/events", "/result"] {
            do { try homeAssistant.subscribe(Self.prefix + topic) } catch { count("home assistant not subscribed to \(topic)") }
        }
    }

    // MARK: Guests and pairing

    /// `latchkey keys revoke`: from now on no success for that key, wherever its phone is.
    func revokeGuest() {
        guard let id = guestKey else { return }
        guard let keys = lock?.keys else { count("guest revoke deferred (lock down)"); return }
        do {
            try keys.revoke(id: id)
            judge.revoke(id, at: loop.now)
            count("guest revoked")
            trace.add("guest \(id) revoked", loop.now)
        } catch {
            count("guest revoke failed")
            trace.add("guest revoke failed: \(error)", loop.now)
        }
    }

    // MARK: Faults

    func powerCut(downFor: Duration) {
        killLock(powerCut: true)
        killBridge()
        air.device(Self.lockAddress)!.powerOff()
        count("power cut")
        loop.schedule(after: downFor) { [weak self] in
            guard let self else { return }
            self.air.device(Self.lockAddress)!.powerOn()
            self.startLock()
            self.startBridge()
        }
    }

    /// The card fills, or goes read-only, at the lock's next write; it comes back after `spell`.
    func diskSpell(_ fault: DiskFault, spell: Duration) {
        disk.schedule(fault, at: .write(disk.writes + 1))
        count(fault == .diskFull ? "disk full spell" : "read-only spell")
        loop.schedule(after: spell) { [weak self] in
            guard let self else { return }
            self.disk.cancelScheduledFaults()
            if fault == .diskFull { self.disk.makeRoom() } else { self.disk.remountReadWrite() }
        }
    }

    /// The lock's end of a link ends (interference, the phone's stack): the phone re-links.
    func dropLink() {
        let links = air.device(Self.lockAddress)!.connectedLinks.compactMap { $0 as? SimulatedLink }
        guard let link = links.first else { return }
        link.disconnect()
        judge.relinkClockRestarts(at: loop.now)
        if ownerHome { judge.phoneReturned(at: loop.now) }
        count("link drop")
    }

    /// The wall clock jumps (a wrong RTC at boot, a bad time source); time synchronisation
    /// steps it back `correctedAfter` later.
    func stepWallClock(by seconds: Int64, correctedAfter: Duration) {
        wallOffset += seconds * 1_000_000_000
        count(seconds > 0 ? "wall clock stepped forwards" : "wall clock stepped backwards")
        loop.schedule(after: correctedAfter) { [weak self] in self?.wallOffset -= seconds * 1_000_000_000 }
    }

    /// A stranger's radio comes in range for `duration`: it links again and again, writing
    /// forged commands naming the owner's key, junk, and replays of what it overheard.
    func strangerVisit(for duration: Duration, seed: UInt64) {
        let visitor = stranger ?? HouseholdStranger(transport: air.device(Self.strangerAddress)!,
                                                    lockAddress: Self.lockAddress) { [weak self] accepted, what in
            guard let self else { return }
            let lied = self.strangerLies
            self.strangerLies = false
            if what == HouseholdStranger.pairingRequest {
                // A window open now (the month's guest pairing) may take the request: only a
                // pairing outside a window is the judge's business.
                guard !self.pairingWindowOpen else { self.count("stranger pairing request during a window"); return }
                if !accepted { self.count("stranger pairing request refused (no window)") }
            }
            self.count(accepted || lied ? "stranger write accepted" : "stranger write refused")
            self.trace.add(accepted || lied ? "stranger write accepted" : "stranger write refused", self.loop.now)
            self.judge.strangerAnswered(accepted: accepted || lied, what: what, at: self.loop.now)
        }
        stranger = visitor
        air.setPosition(Self.strangerAtDoor, of: Self.strangerAddress)
        count("stranger visit")
        var random = SplitMix64(seed: seed)
        let secret = (0..<4).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }
        // First a pairing request of its own, while no window is open: the lock must refuse it.
        if !pairingWindowOpen, let request = HouseholdStranger.pairingRequest(random: strangerRandom) {
            visitor.sendPairing(request)
        }
        // Three frames a link before the lock drops it: one forged, one junk, one replay (or
        // a second forgery when nothing was overheard yet), for each link of the visit.
        for n in 0..<Int(random.next(in: 2...6)) {
            visitor.send("forged command", HouseholdStranger.forged(key: Self.ownerKey, secret: secret, counter: UInt64(n + 1),
                                                                      random: strangerRandom))
            let junk = (0..<Int(random.next(in: 1...24))).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            visitor.send("junk") { _ in junk }
            if let heard = overheard.isEmpty ? nil : overheard[Int(random.next(in: 0...(overheard.count - 1)))] {
                visitor.send("replayed write") { _ in heard }
                count("stranger replay")
            } else {
                visitor.send("forged command", HouseholdStranger.forged(key: Self.ownerKey, secret: secret,
                                                                          counter: UInt64(n + 100), random: strangerRandom))
            }
        }
        visitor.connect()
        loop.schedule(after: duration) { [weak self] in
            guard let self else { return }
            visitor.leave()
            self.air.setPosition(Self.elsewhere, of: Self.strangerAddress)
        }
    }

    /// The lock's radio, or the owner's phone's, refuses every request for `spell` (a busy
    /// controller): each refusal is reported to the agent and the request made again every
    /// `RefusingRadio.retryIn`; the re-link's clock starts again when the spell ends.
    func refuseRadio(lock onLock: Bool, for spell: Duration) {
        (onLock ? lockRadio : ownerRadio).refuse(for: spell)
        count(onLock ? "lock radio refusal spell" : "phone radio refusal spell")
        loop.schedule(after: spell) { [weak self] in
            guard let self else { return }
            self.judge.relinkClockRestarts(at: self.loop.now)
        }
    }

    func brokerOutage(for duration: Duration) {
        broker.stop()
        count("broker outage")
        loop.schedule(after: duration) { [weak self] in
            guard let self else { return }
            self.broker.start()
            self.homeAssistant.connect()
        }
    }

    // MARK: The bridge

    final class BridgeProcess {
        let loop: ProcessLoop
        let bridge: Bridge
        let connection: SimulatedMQTTConnection
        let link: InProcessLockLink
        init(loop: ProcessLoop, bridge: Bridge, connection: SimulatedMQTTConnection, link: InProcessLockLink) {
            self.loop = loop; self.bridge = bridge; self.connection = connection; self.link = link
        }
    }

    func startBridge() {
        guard bridge == nil else { return }
        let process = ProcessLoop(loop)
        let availability = "latchkey/bridge/sim/availability"
        let connection = broker.connection(MQTTEndpoint(host: "sim", port: 1, clientID: "bridge",
                                                        will: Bridge.will(availability)))
        let bridge = Bridge(connection: connection, loop: process, availabilityTopic: availability) { _, _ in }
        let discovery = HomeAssistantDiscovery(discoveryPrefix: "homeassistant", bridgeAvailability: availability,
                                               softwareVersion: "sim")
        let link = InProcessLockLink(world: self, loop: process)
        do {
            _ = try LockBridge(lock: BridgedLock(name: "Front Door", controlSocket: "-", topicPrefix: Self.prefix,
                                                 commands: [.lock, .unlock], unlockCode: nil, commandsPerMinute: 30),
                               link: link, bridge: bridge, discovery: discovery, maximumCommandAge: .seconds(30),
                               resultExpiry: 60, cursorFile: CursorFile(path: directory + "/bridge.cursor"),
                               wallNow: { [unowned self] in Double(self.wallClock.nanosecondsSinceEpoch()) / 1e9 })
        } catch {
            count("bridge start failed")
            return
        }
        bridge.start()
        self.bridge = BridgeProcess(loop: process, bridge: bridge, connection: connection, link: link)
        judge.bridgeRestarted()
    }

    func killBridge() {
        guard let process = bridge else { return }
        process.loop.kill()
        broker.drop(process.connection)
        process.link.lockWentDown()
        bridge = nil
    }

    // MARK: Looking

    /// The lock's store files now (the database and its WAL).
    var storeBytes: Int64 {
        var total: Int64 = 0
        for suffix in ["", "-wal"] {
            var st = stat()
            if stat(lockState + "/" + StateStores.lockFile + suffix, &st) == 0 { total += Int64(st.st_size) }
        }
        return total
    }

}

/// An event sink that hands each event on.
final class Sink: AgentEventSink {
    let handler: (AgentEvent) -> Void
    init(_ handler: @escaping (AgentEvent) -> Void) { self.handler = handler }
    func emit(_ event: AgentEvent) { handler(event) }
}

/// Home Assistant's side of the broker: what it receives goes to the world.
final class HomeAssistant: MQTTConnectionDelegate {
    unowned let world: HouseholdWorld
    init(world: HouseholdWorld) { self.world = world }
    func mqttDidConnect(_ connection: any MQTTConnection) { world.homeAssistantConnected() }
    func mqtt(_ connection: any MQTTConnection, didFailToConnect failure: MQTTConnectFailure) {}
    func mqtt(_ connection: any MQTTConnection, didDisconnect reason: String) {}
    func mqtt(_ connection: any MQTTConnection, didAcknowledge messageID: Int) {}
    func mqtt(_ connection: any MQTTConnection, didReceive message: MQTTMessage) { world.homeAssistantReceived(message) }
}

/// The bridge's control-socket link to the lock, in process: each request goes to the
/// running lock's control commands (as the bridge's restricted peer would send them); with
/// no lock running, the agent cannot be reached and follow streams close.
final class InProcessLockLink: AgentLink {
    unowned let world: HouseholdWorld
    let loop: ProcessLoop
    private var open: [(command: String, line: (String) -> Void, closed: (String) -> Void)] = []

    init(world: HouseholdWorld, loop: ProcessLoop) { self.world = world; self.loop = loop }

    func request(_ command: String, line: @escaping (String) -> Void, done: @escaping (Bool, String) -> Void) {
        loop.execute { [self] in
            guard let lock = world.lock else { return done(false, "error cannot reach the agent") }
            lock.wired.dispatcher.handle(command.split(separator: " ").map(String.init)) { [loop] reply in
                loop.execute {
                    if reply.hasPrefix("ok") { done(true, reply) } else if reply.hasPrefix("error") { done(false, reply) }
                    else { line(reply) }
                }
            }
        }
    }

    func stream(_ command: String, line: @escaping (String) -> Void, closed: @escaping (String) -> Void) {
        loop.execute { [self] in
            guard let lock = world.lock else { return closed("cannot reach the agent") }
            open.append((command, line, closed))
            let generation = ObjectIdentifier(lock)
            lock.wired.dispatcher.handle(command.split(separator: " ").map(String.init)) { [weak self, loop] reply in
                // A follower of a dead lock process hears nothing more.
                guard let self, let now = self.world.lock, ObjectIdentifier(now) == generation else { return }
                loop.execute { line(reply) }
            }
        }
    }

    func lockWentDown() {
        let ending = open
        open = []
        for s in ending { loop.execute { s.closed("the agent closed the connection") } }
    }
}
