import LatchkeyPhone
import LatchkeyPhoneAgent
import LatchkeySim
import LatchkeySimDisk
import LatchkeyTransport

/// The phones' own faults: each phone's store is on a `SimulatedDisk` of its own, which loses
/// its unsynced writes when the phone's power goes and fills or goes read-only for spells;
/// the guest's radio refuses as the owner's does. What must hold through them: no command
/// counter sent twice (`HouseholdJudge.phoneSent`), and the owner's phone re-linked within the
/// bound once it runs again (its start fails, and is retried, while its disk is read-only).
extension HouseholdWorld {
    /// The phone's battery dies (or the OS kills everything): its process with no cleanup,
    /// its disk's unsynced writes lost, written or torn, its radio off; all back `downFor` later.
    func phonePowerCut(guest isGuest: Bool, downFor: Duration) {
        let address = isGuest ? Self.guestAddress : Self.ownerAddress
        guard !phonesPoweredOff.contains(address) else { return }
        if isGuest && guestKey == nil { return }
        // A phone whose process was down (killed, or failing to start) loses its page cache too.
        if (isGuest ? guest : owner) != nil { killPhone(guest: isGuest, powerCut: true) }
        else { (isGuest ? guestDisk : ownerDisk).cutPower() }
        phonesPoweredOff.insert(address)
        air.device(address)!.powerOff()
        count(isGuest ? "guest phone power cut" : "owner phone power cut")
        trace.add(isGuest ? "guest phone lost power" : "owner phone lost power", loop.now)
        loop.schedule(after: downFor) { [weak self] in
            guard let self else { return }
            self.phonesPoweredOff.remove(address)
            // Its radio comes on refusing for a while (a busy controller at boot): the power
            // request itself is refused and asked again.
            self.refusePhoneRadio(guest: isGuest, for: .seconds(4))
            self.air.device(address)!.powerOn()
            self.startPhone(guest: isGuest)
        }
    }

    /// The phone's storage fills, or goes read-only, at its next write; back after `spell`
    /// (the phone's next start after that opens its store read-write again). A phone writes
    /// seldom (a command's counter, a change of presence): a spell whose fault has not fired
    /// by its end lasts on, by half hours, until the phone has written into it (a day at most).
    func phoneDiskSpell(guest isGuest: Bool, _ fault: DiskFault, spell: Duration) {
        let disk = isGuest ? guestDisk : ownerDisk
        disk.schedule(fault, at: .write(disk.writes + 1))
        let firedBefore = disk.fired.count
        let whose = isGuest ? "guest phone" : "owner phone"
        count(fault == .diskFull ? "\(whose) disk full spell" : "\(whose) read-only spell")
        func end(after wait: Duration, tries: Int) {
            loop.schedule(after: wait) { [weak self] in
                guard let self else { return }
                if disk.fired.count == firedBefore && tries < 48 { return end(after: .seconds(1800), tries: tries + 1) }
                if disk.fired.count > firedBefore { self.count("\(whose) disk fault fired") }
                disk.cancelScheduledFaults()
                if fault == .diskFull { disk.makeRoom() } else { disk.remountReadWrite() }
                if !isGuest {
                    // A phone backing off from its refusing store finds out at its next step.
                    self.judge.phoneStoreBack(at: self.loop.now, longestStep: PhoneAgentConfiguration.defaultStoreRetryLimit)
                    self.judge.relinkClockRestarts(at: self.loop.now)
                }
            }
        }
        end(after: spell, tries: 0)
    }

    /// The guest's phone's radio refuses every request for `spell` (or the owner's: as
    /// `refuseRadio(lock: false, ...)`, without its count).
    func refusePhoneRadio(guest isGuest: Bool, for spell: Duration) {
        (isGuest ? guestRadio : ownerRadio).refuse(for: spell)
        if isGuest { count("guest phone radio refusal spell") }
        loop.schedule(after: spell) { [weak self] in
            guard let self else { return }
            self.judge.relinkClockRestarts(at: self.loop.now)
        }
    }
}

extension HouseholdRun {
    /// Each day's faults of the phones, from a generator of their own (the rest of the day's
    /// script draws as it did without them): a power cut of one phone weekly, 1 min to 1 h;
    /// a full disk on one phone every ten days and a read-only one every fifteen, 1 to 6 h
    /// from its next write; on the guest's days (from the month's second), its phone killed
    /// on about one in four with its radio refusing for 2 to 60 s from the kill.
    func phoneFaults(day: Int) -> [(Instant, Action)] {
        var r = SplitMix64(seed: seed ^ 0x9405_FA17 ^ (UInt64(day) &* 0xA24B_AED4_963E_E407))
        let dayStart = Instant(nanoseconds: Int64(day) * 86_400_000_000_000)
        func anytime() -> Instant { dayStart + .milliseconds(Int64(r.next(in: 0...86_399_999))) }
        func minutes(_ range: ClosedRange<Int>) -> Duration { .seconds(60 * Int64(r.next(in: range))) }
        var out: [(Instant, Action)] = []
        if day % 7 == 1 { out.append((anytime(), .phonePowerCut(guest: r.next(through: 2) == 0, minutes(1...60)))) }
        if day % 10 == 2 { out.append((anytime(), .phoneDiskSpell(guest: r.next(through: 2) == 0, .diskFull, minutes(60...360)))) }
        if day % 15 == 11 { out.append((anytime(), .phoneDiskSpell(guest: r.next(through: 2) == 0, .readOnly, minutes(60...360)))) }
        if (2...28).contains(day % 30), r.next(through: 3) == 0 {
            let kill = dayStart + .seconds(Int64(r.next(in: (11 * 3600)...(15 * 3600))))
            out.append((kill, .killGuest))
            out.append((kill, .guestRadioRefusal(.seconds(Int64(r.next(in: 2...60))))))
        }
        return out
    }
}

/// A phone's store as the household counts it: every save its disk refused (a full or
/// read-only spell), whatever the agent says of it.
final class CountedPhoneStore: PhoneStateStore {
    private let store: any PhoneStateStore
    private let refused: () -> Void
    init(_ store: any PhoneStateStore, refused: @escaping () -> Void) {
        self.store = store
        self.refused = refused
    }
    func load() throws -> PhoneState? { try store.load() }
    func save(_ state: PhoneState) throws {
        do { try store.save(state) } catch {
            refused()
            throw error
        }
    }
}
