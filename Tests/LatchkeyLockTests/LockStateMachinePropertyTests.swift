import LatchkeyLock
import LatchkeyTransport
import Testing

/// Long random input sequences against the pure state machine, checking the rules that
/// must hold whatever happens: the journal comes before the actuator, and without an
/// unlock intent the lock never drives toward unlocked.
@Suite struct LockStateMachinePropertyTests {
    struct SplitMix64 {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
    }

    static let traits = [
        LockHardwareTraits(hasDoorSensor: true, hasBoltSensor: true, canHoldUnlocked: true, restsLocked: true),
        LockHardwareTraits(hasDoorSensor: true, hasBoltSensor: false, canHoldUnlocked: true, restsLocked: true),
        LockHardwareTraits(hasDoorSensor: true, hasBoltSensor: true, canHoldUnlocked: false, restsLocked: true),
        LockHardwareTraits(hasDoorSensor: false, hasBoltSensor: true, canHoldUnlocked: true, restsLocked: false),
    ]

    func randomInput(_ rng: inout SplitMix64, unlockIntents: Bool, recorded: [DecisionID]) -> LockInput {
        let sources: [OperationSource] = [.remote, .button, .manual, .auto, .schedule]
        var operations: [LockCommand.Operation] = [.lock]
        if unlockIntents { operations += [.unlock, .unlockWithTimeout(.seconds(3))] }
        let modes: [OperatingMode] = unlockIntents ? OperatingMode.allCases : [.normal, .noRemoteLockUnlock]
        let someID = recorded.isEmpty ? DecisionID(999) : rng.pick(recorded)
        switch rng.below(11) {
        case 0, 1: return .command(LockCommand(rng.pick(operations), source: rng.pick(sources)))
        case 2: return .buttonPressed
        case 3: return .setOperatingMode(rng.pick(modes), source: rng.pick(sources))
        case 4: return .doorSensor(open: rng.below(2) == 0)
        case 5: return .boltPosition(rng.pick([.locked, .unlocked, .between]))
        case 6: return .movementCompleted(rng.pick(LockOperationType.allCases))
        case 7: return .actuatorReleased
        case 8: return .actuatorFault
        case 9: return rng.below(2) == 0 ? .journalRecorded(someID) : .journalFailed(someID)
        default: return .timerFired(rng.pick(LockTimer.allCases))
        }
    }

    /// Runs a machine the way the shell does, journal answers included; returns every
    /// (input, actions) pair.
    func run(seed: UInt64, unlockIntents: Bool, steps: Int = 3000) -> [(LockInput, [LockAction])] {
        var rng = SplitMix64(state: seed)
        var behaviour = LockBehaviour()
        behaviour.buttonAction = unlockIntents ? .toggle : .lock
        behaviour.doorAjarTime = .seconds(90)
        var machine = LockStateMachine(behaviour: behaviour, hardware: rng.pick(Self.traits))
        var now = Instant.zero + .seconds(1000)
        // Start-up, possibly with a decision a crash left behind. Without unlock intents, a
        // recovered unlock is always past its window.
        let recovered: LockDecision? = switch rng.below(3) {
        case 0: nil
        case 1: LockDecision(id: DecisionID(50), operation: .lock, source: .remote, decidedAt: .zero, deadline: .zero)
        default: LockDecision(id: DecisionID(51), operation: .unlock, source: .remote,
                              decidedAt: .zero + .seconds(999),
                              deadline: .zero + .seconds(unlockIntents ? 1005 : 1000))
        }
        var queue: [LockInput] = [.start(StartupReading(doorOpen: rng.below(2) == 0,
                                                        bolt: rng.pick([.locked, .unlocked, .between])),
                                         recovered: recovered)]
        var recorded: [DecisionID] = []
        var log: [(LockInput, [LockAction])] = []
        for _ in 0..<steps {
            let input = queue.isEmpty ? randomInput(&rng, unlockIntents: unlockIntents, recorded: recorded) : queue.removeFirst()
            now += .milliseconds(Int64(rng.below(8000)))
            let actions = machine.handle(input, at: now)
            log.append((input, actions))
            for case .record(let decision) in actions {
                recorded.append(decision.id)
                queue.append(rng.below(4) == 0 ? .journalFailed(decision.id) : .journalRecorded(decision.id))
            }
        }
        return log
    }

    @Test(arguments: 0..<40 as Range<UInt64>) func theActuatorOnlyMovesForARecordedDecision(seed: UInt64) {
        var recorded = Set<DecisionID>()
        var movements = 0
        for (input, actions) in run(seed: seed, unlockIntents: true) {
            for case .record(let decision) in actions { recorded.insert(decision.id) }
            guard actions.contains(where: { if case .drive = $0 { true } else { false } }) else { continue }
            movements += 1
            switch input {
            case .journalRecorded(let id):
                #expect(recorded.contains(id), "drive after the journal confirmed \(id)")
            case .journalFailed(let id):
                // Locking is safe: a lock moves without its record (written later by the shell).
                #expect(actions.allSatisfy { if case .drive(let op) = $0 { op == .lock } else { true } },
                        "only a lock drives after its record failed (\(id))")
            case .start(_, let recovered?):
                #expect(recovered.operation == .lock || recovered.id == DecisionID(51), "only a recovered decision resumes")
            default:
                Issue.record("drive in response to \(input) without a journal entry")
            }
        }
        #expect(movements > 0, "the sequence exercised the actuator")
    }

    @Test(arguments: 0..<40 as Range<UInt64>) func withoutAnUnlockIntentNothingDrivesTowardUnlocked(seed: UInt64) {
        var locks = 0
        for (input, actions) in run(seed: seed, unlockIntents: false) {
            for action in actions {
                if case .drive(let operation) = action {
                    #expect(operation == .lock, "unlock driven in response to \(input)")
                    locks += 1
                }
                if case .record(let decision) = action {
                    #expect(decision.operation == .lock)
                }
            }
        }
        #expect(locks > 0)
    }
}
