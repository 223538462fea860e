import LatchkeyGPIO
import LatchkeyTransport

/// How the lock's actuator is driven. Every kind is safe when its outputs are inactive:
/// that is the level each output is requested with, and the level a dead process should
/// leave through the board's pull resistors (docs/LOCK-RULES.md: the safe state comes from
/// hardware). Fail-safe hardware (energise to lock) is not supported.
public enum ActuatorKind: Hashable, Sendable {
    /// One output, active while unlocked: a relay, strike or bolt rated for continuous duty.
    case hold
    /// One output energised for the given time to unlock; the fail-secure solenoid or
    /// strike springs back when it drops. For intermittent-rated coils: the lock cannot be
    /// held unlocked (no Passage) and relocks when the pulse ends.
    case pulse(Duration)
    /// An H-bridge motor: one output drives toward unlocked, another toward locked. With
    /// bolt sensors it runs until the target sensor; without, for `runTime`. It stays
    /// wherever it stops.
    case motor(runTime: Duration)
}

public struct ActuatorConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "actuator configuration: \(message)" }
}

/// Drives the actuator outputs for the lock. Knows timing and polarity of the drive, not
/// policy: the state machine decides, this carries out, and reports completion (only
/// without bolt sensors: with them the sensors say when the bolt arrived) and release.
///
/// `maximumEnergizeTime` is a hard bound on any energised output, enforced here whatever
/// the state machine does: an energised hold or pulse output drops (reported as a release),
/// a motor stops (the jam timer then reports it).
public final class ActuatorDriver {
    public let kind: ActuatorKind
    public let maximumEnergizeTime: Duration?
    public let hasBoltSensor: Bool
    private let unlockOutput: any GPIOOutput
    private let lockOutput: (any GPIOOutput)?
    private let loop: any EventLoop
    private var pulseEnd: Scheduled?
    private var cutOff: Scheduled?
    private var runEnd: Scheduled?
    private var motorTarget: LockOperationType?

    /// Without bolt sensors: the drive for this operation has finished.
    public var onMovementCompleted: ((LockOperationType) -> Void)?
    /// A hold or pulse output dropped by itself (pulse end, energize limit): the bolt is
    /// returning to locked.
    public var onReleased: (() -> Void)?
    /// An output could not be set from a timer (nobody's call to throw to).
    public var onFault: ((GPIOError) -> Void)?

    /// `unlockOutput` energises toward unlocked (for hold and pulse, the only output);
    /// `lockOutput` is the motor's other direction.
    public init(kind: ActuatorKind, unlockOutput: any GPIOOutput, lockOutput: (any GPIOOutput)? = nil,
                maximumEnergizeTime: Duration? = nil, hasBoltSensor: Bool, loop: any EventLoop)
        throws(ActuatorConfigurationError)
    {
        if let limit = maximumEnergizeTime, limit <= .zero {
            throw ActuatorConfigurationError("maximum energize time must be positive")
        }
        switch kind {
        case .hold:
            guard lockOutput == nil else { throw ActuatorConfigurationError("a hold actuator has one output") }
        case .pulse(let duration):
            guard lockOutput == nil else { throw ActuatorConfigurationError("a pulse actuator has one output") }
            guard duration > .zero else { throw ActuatorConfigurationError("pulse duration must be positive") }
            if let limit = maximumEnergizeTime, duration > limit {
                throw ActuatorConfigurationError("pulse of \(duration) exceeds the maximum energize time \(limit)")
            }
        case .motor(let runTime):
            guard lockOutput != nil else { throw ActuatorConfigurationError("a motor needs a lock-direction output") }
            guard runTime > .zero else { throw ActuatorConfigurationError("motor run time must be positive") }
            if let limit = maximumEnergizeTime, !hasBoltSensor, runTime > limit {
                throw ActuatorConfigurationError("motor run time \(runTime) exceeds the maximum energize time \(limit)")
            }
        }
        self.kind = kind
        self.unlockOutput = unlockOutput
        self.lockOutput = lockOutput
        self.maximumEnergizeTime = maximumEnergizeTime
        self.hasBoltSensor = hasBoltSensor
        self.loop = loop
    }

    /// What the state machine needs to know about this actuator.
    public func traits(hasDoorSensor: Bool) -> LockHardwareTraits {
        var canHold = true, restsLocked = true
        if case .pulse = kind { canHold = false }
        if case .motor = kind { restsLocked = false }
        return LockHardwareTraits(hasDoorSensor: hasDoorSensor, hasBoltSensor: hasBoltSensor,
                                  canHoldUnlocked: canHold, restsLocked: restsLocked)
    }

    public func drive(_ operation: LockOperationType) throws(GPIOError) {
        switch kind {
        case .hold:
            try setCoil(operation == .unlock)
        case .pulse(let duration):
            try setCoil(operation == .unlock)
            if operation == .unlock {
                pulseEnd = loop.schedule(after: duration) { [weak self] in self?.release() }
            }
        case .motor(let runTime):
            try stop()
            // init refuses a motor without its lock-direction output.
            let forward = operation == .unlock ? unlockOutput : lockOutput!
            try forward.set(true)
            motorTarget = operation
            armCutOff()
            if !hasBoltSensor {
                runEnd = loop.schedule(after: runTime) { [weak self] in
                    guard let self else { return }
                    do throws(GPIOError) {
                        try self.stop()
                        self.onMovementCompleted?(operation)
                    } catch {
                        self.onFault?(error)
                    }
                }
            }
            return
        }
        if !hasBoltSensor {
            loop.execute { [weak self] in self?.onMovementCompleted?(operation) }
        }
    }

    /// De-energises every output. Tries all of them, then throws the first failure.
    public func stop() throws(GPIOError) {
        for timer in [pulseEnd, cutOff, runEnd] { timer?.cancel() }
        pulseEnd = nil; cutOff = nil; runEnd = nil
        motorTarget = nil
        var firstError: GPIOError?
        for output in [unlockOutput, lockOutput].compactMap({ $0 }) {
            do { try output.set(false) } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }

    /// Bolt sensor news: a motor stops as soon as it reaches its target.
    public func boltMoved(to position: BoltPosition) {
        guard let target = motorTarget, position.lockState == target.targetState else { return }
        do { try stop() } catch { onFault?(error) }
    }

    /// Whether any output is energised right now.
    public var isEnergized: Bool { unlockOutput.isActive || (lockOutput?.isActive ?? false) }

    private func setCoil(_ energized: Bool) throws(GPIOError) {
        pulseEnd?.cancel()
        pulseEnd = nil
        if energized {
            try unlockOutput.set(true)
            armCutOff()
        } else {
            cutOff?.cancel()
            cutOff = nil
            try unlockOutput.set(false)
        }
    }

    private func armCutOff() {
        cutOff?.cancel()
        guard let limit = maximumEnergizeTime else { return }
        cutOff = loop.schedule(after: limit) { [weak self] in
            guard let self else { return }
            guard case .motor = self.kind else { return self.release() }
            do throws(GPIOError) { try self.stop() } catch { self.onFault?(error) }
        }
    }

    /// The coil drops by itself: end of a pulse, or the energize limit.
    private func release() {
        guard unlockOutput.isActive else { return }
        do {
            try setCoil(false)
            onReleased?()
        } catch {
            onFault?(error)  // still energised: the lock must not claim it relocked
        }
    }
}
