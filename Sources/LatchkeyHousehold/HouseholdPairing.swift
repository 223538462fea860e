#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPhoneAgent
import LatchkeySecurity
import LatchkeySettings
import LatchkeyTransport

extension HouseholdWorld {
    /// The month's guest's new phone pairs through the month's pairing window, as a household
    /// does it: the owner runs `latchkey pair --window 60` on the lock (a user key, no arrival
    /// unlock), the guest at the door runs `latchkey phone pair` pinning the fingerprint the
    /// owner reads out (`PhonePairing`: the real exchange over the air), the owner compares the
    /// two codes and confirms, or refuses when they differ. The key the phone derived is the
    /// guest's from then on; the guest taps to come in. An attempt that ends with no key is
    /// tried again half an hour later, three attempts at most.
    func guestPairs(attempt: Int = 1) {
        killPhone(guest: true)
        guestKey = nil
        guestDirectory = nil
        guard lock != nil else { return pairingFailed("lock down", attempt: attempt) }
        let number = nextGuest
        nextGuest += 1
        let state = guestState + "-\(number)"
        mkdir(state, 0o700)
        // A new phone: its own stream of octets (its pairing key, its nonces).
        guestRandom = .seeded(seed ^ (UInt64(number) &* 0x9E37_79B9_7F4A_7C15))
        moveGuest(home: true)
        GuestPairing(world: self, number: number, state: state, attempt: attempt).start()
    }

    func pairingFailed(_ why: String, attempt: Int) {
        count("guest pairing failed (\(why))")
        trace.add("guest pairing failed: \(why)", loop.now)
        guard attempt < 3 else { return }
        loop.schedule(after: .seconds(1800)) { [weak self] in self?.guestPairs(attempt: attempt + 1) }
    }
}

/// One pairing attempt of a guest's phone: the lock's `pair` command and its lines, the phone's
/// `PhonePairing`, and the owner between them comparing the codes.
private final class GuestPairing {
    unowned let world: HouseholdWorld
    let number: Int
    let state: String
    let attempt: Int
    private var phone: PhonePairing?
    /// The code the lock shows once a phone asked (`confirm ... code=`), and what the phone derived.
    private var lockCode: String?
    private var derived: Result<PairedKey, PairingFailure>?
    private var ownerAnswered = false
    private var concluded = false

    init(world: HouseholdWorld, number: Int, state: String, attempt: Int) {
        self.world = world; self.number = number; self.state = state; self.attempt = attempt
    }

    func start() {
        guard let lock = world.lock else { return conclude(failure: "lock down") }
        // The window is 60 s and a pending key waits 120 s for the owner: an attempt still open
        // after both (its lock died with the window) has failed.
        world.loop.schedule(after: .seconds(200)) { [self] in conclude(failure: "no outcome (the lock restarted?)") }
        lock.wired.dispatcher.handle(["pair", "60", "user", "no", "guest-\(number)"]) { [self] line in lockSaid(line) }
    }

    private func lockSaid(_ line: String) {
        guard !concluded else { return }
        let words = line.split(separator: " ")
        if line.hasPrefix("note pairing window open"), line.contains("lock fingerprint "), let fingerprint = words.last {
            world.pairingWindowOpen = true
            world.count("pairing window opened")
            runPhone(fingerprint: String(fingerprint))
        } else if line.hasPrefix("confirm "), let code = words.first(where: { $0.hasPrefix("code=") }) {
            lockCode = String(code.dropFirst(5))
            ownerCompares()
        } else if line.hasPrefix("ok paired key ") {
            enrolled(id: HouseholdWorld.number(after: "ok paired key ", in: line).map(UInt32.init))
        } else if line.hasPrefix("error") {
            conclude(failure: line.contains("closed with no phone") ? "window closed unused"
                                : line.contains("not enrolled") ? "not enrolled" : "window refused")
        }
    }

    /// `latchkey phone pair --lock-fingerprint F` on the guest's phone, at the door.
    private func runPhone(fingerprint: String) {
        let pairing = PhonePairing(transport: world.air.device(HouseholdWorld.guestAddress)!,
                                   target: .address(HouseholdWorld.lockAddress, fingerprint: fingerprint),
                                   name: "guest-\(number)", events: Sink { [weak world] event in
                                       world?.trace.add("guest " + event.name, event.time)
                                   }, random: world.guestRandom)
        phone = pairing
        pairing.start { [self] result in
            derived = result
            if case .failure(let why) = result { world.trace.add("guest phone pairing failed: \(why)", world.loop.now) }
            ownerCompares()
        }
    }

    /// The owner looks at both screens: the same code confirms, another (or none on the phone)
    /// refuses. Nothing to compare until the lock shows a code.
    private func ownerCompares() {
        guard let lockCode, let derived, !ownerAnswered, !concluded, let lock = world.lock else { return }
        ownerAnswered = true
        if case .success(let key) = derived, key.comparisonCode == lockCode {
            lock.wired.dispatcher.handle(["pair-confirm", lockCode]) { _ in }
        } else {
            world.count("guest pairing refused by the owner (codes differ)")
            lock.wired.dispatcher.handle(["pair-reject"]) { _ in }
        }
    }

    private func enrolled(id: UInt32?) {
        guard case .success(let key)? = derived, key.keyID == id else {
            return conclude(failure: "the lock enrolled a key the phone does not hold")
        }
        do {
            try PairedKeyFile.write(key, lockAddress: HouseholdWorld.lockAddress, to: state + "/" + PairedKeyFile.fileName)
            try world.writePhoneConfig(state, key: nil, address: HouseholdWorld.guestAddress)
        } catch {
            return conclude(failure: "phone's key not written: \(error)")
        }
        concluded = true
        world.pairingWindowOpen = false
        world.air.device(HouseholdWorld.guestAddress)!.detachApplication()
        world.guestDirectory = state
        world.guestKey = key.keyID
        world.count("guest paired over the air")
        world.trace.add("guest \(key.keyID) paired", world.loop.now)
        world.startPhone(guest: true)
        // The guest comes in with the new key, and leaves.
        world.loop.schedule(after: .seconds(30)) { [world] in
            if world.guestHome { world.tap(.unlock, guest: true) }
        }
        world.loop.schedule(after: .seconds(300)) { [world] in world.moveGuest(home: false) }
    }

    private func conclude(failure why: String) {
        guard !concluded else { return }
        concluded = true
        world.pairingWindowOpen = false
        world.air.device(HouseholdWorld.guestAddress)!.detachApplication()
        world.moveGuest(home: false)
        world.pairingFailed(why, attempt: attempt)
    }
}
