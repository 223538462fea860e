import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeyManagers
import LatchkeySecurity
import LatchkeyTransport

/// An authenticated command's way to the lock: its turn in the queue, the challenge (held,
/// read ahead, or read now), the counter made durable, the sealed write, and the lock's
/// answer — told to the command's caller, and returned to the coordinator for what follows on
/// the link. One command at a time: the bearer takes one request at a time.
final class CommandPipeline {
    /// What the pipeline needs of the link and of the lock service's setup on it.
    struct Link {
        /// The lock service's setup is done on the link.
        var isReady: () -> Bool
        /// The challenge characteristic is known.
        var hasChallenge: () -> Bool
        /// Reads a challenge for the command in flight.
        var readChallenge: () -> Void
        /// The control point is known: a sealed command can be written.
        var canWrite: () -> Bool
        /// Writes a sealed command to the control point, with response.
        var write: ([UInt8]) -> Void
        /// A request's `error` showed a stale cache: true when the setup discovers again (the
        /// command in flight then waits for it, at the head of the queue).
        var rediscoverIfStale: (BluetoothError) -> Bool
        /// No answer in time: drop the link; the request that never times out forms a fresh one.
        var drop: () -> Void
        /// The next command's counter, durable before it is used; nil when it could not be saved.
        var nextCounter: () -> UInt64?
    }

    /// The lock's answer to a command's write.
    enum Answer: Equatable {
        /// Not the answer to a command's write.
        case none
        /// The lock refused the challenge read ahead: the same command goes again after a fresh read.
        case sentAgain
        /// Accepted (nil), or refused and why.
        case answered(LockOperation, CommandRejection?)
        /// The write failed below the lock's service.
        case notDelivered(LockOperation)
    }

    /// Why a command whose counter could not be made durable did not go.
    static let counterNotSaved = "its counter could not be saved (the phone's store refused the write)"

    private let configuration: PhoneAgentConfiguration
    private let link: Link
    private let readAhead: ChallengeReadAhead
    private let session: PhoneLinkSession
    private let wakeWork: WakeWork
    private let events: PhoneEventOutput
    private var loop: any EventLoop { events.loop }
    private var commands: CommandQueue!

    init(configuration: PhoneAgentConfiguration, link: Link, readAhead: ChallengeReadAhead, session: PhoneLinkSession,
         wakeWork: WakeWork, events: PhoneEventOutput) {
        self.configuration = configuration
        self.link = link
        self.readAhead = readAhead
        self.session = session
        self.wakeWork = wakeWork
        self.events = events
        commands = CommandQueue(loop: events.loop, timeout: configuration.commandTimeout) { [weak self] in
            self?.commandTimedOut()
        }
    }

    /// No command queued or in flight: the link's ATT queue is free for the subscription,
    /// which must not slip between a challenge read and its write.
    var isIdle: Bool { commands.isIdle }
    /// A command is in flight.
    var isBusy: Bool { commands.current != nil }

    /// Queues a command (it starts at `pump`), as wake-up work.
    func append(_ operation: LockOperation, mode: UInt8?, completion: @escaping CommandQueue.Completion) {
        commands.append(operation, mode: mode, completion: completion)
        wakeWork.backgroundTasks.begin(WakeWork.commandsTask)
    }

    /// Starts the next queued command, under its timeout: sealed at once with a challenge
    /// read ahead, or after reading one. One that comes while the read ahead is on its way
    /// waits for it (`readAheadAnswered`): the bearer takes one request at a time.
    func pump() {
        guard link.isReady(), link.hasChallenge(), let next = commands.start() else { return }
        let op = next.operation
        if readAhead.isReading {
            emit(.phoneCommandStarted(op: .init(op), challenge: .ahead))  // the read under way serves it
            commands.waitForReadAhead()
            return
        }
        sendInFlight(announcing: true)
    }

    /// The command in flight goes: its sealed write with a held challenge, else its read.
    private func sendInFlight(announcing: Bool) {
        guard let op = commands.current?.operation, link.hasChallenge() else { return }
        if let held = readAhead.takeHeldChallenge(for: op) {
            if announcing { emit(.phoneCommandStarted(op: .init(op), challenge: .held)) }  // its write goes now
            commands.sealedWithHeldChallenge()
            sealAndWrite(challenge: held)
        } else {
            if announcing { emit(.phoneCommandStarted(op: .init(op))) }  // its challenge read goes now
            link.readChallenge()
        }
    }

    /// The read ahead answered while a command waited for it.
    func readAheadAnswered() {
        guard commands.readAheadArrived() else { return }
        sendInFlight(announcing: false)
    }

    /// The answer to the command's own challenge read.
    func challengeRead(value: [UInt8]?, error: BluetoothError?) {
        guard commands.current?.awaitingChallenge == true else { return }
        if let error {
            // The first request on cached handles: a stale cache shows here. Discover again
            // and send the same command once the setup is done.
            if link.rediscoverIfStale(error) {
                commands.sendAgain(retried: false)
                return
            }
            finish(.failure(.notDelivered("challenge read: \(error)")))
            return
        }
        // An undecodable grant fails the command below (notDelivered), reported to the caller.
        guard let grant = try? ChallengeGrant(decoding: value ?? []) else {
            finish(.failure(.notDelivered("bad challenge")))
            return
        }
        sealAndWrite(challenge: grant.challenge)
    }

    /// Seals the command in flight with `challenge` and writes it to the control point.
    private func sealAndWrite(challenge: [UInt8]) {
        guard let f = commands.challengeArrived(), link.canWrite() else {
            finish(.failure(.notDelivered("lock control characteristic unknown")))
            return
        }
        // The counter is durable before the frame leaves: a restart never reuses one.
        guard let counter = link.nextCounter() else {
            finish(.failure(.notDelivered(Self.counterNotSaved)))
            return
        }
        do {
            let frame = try CommandSealing.seal(CommandBody(operation: f.operation, commandID: counter,
                                                            operatingMode: f.mode),
                                                keyID: configuration.keyID, secret: configuration.secret,
                                                counter: counter, challenge: challenge, random: configuration.random)
            session.prepareSession(for: frame)
            emit(.phoneCommandSent(op: .init(f.operation), counter: counter))
            wakeWork.commandWritten()
            link.write(frame.bytes)
        } catch {
            finish(.failure(.notDelivered("seal: \(error)")))
        }
    }

    /// The control point's Write Response (or error) for the command in flight.
    func writeAnswered(error: BluetoothError?) -> Answer {
        guard let f = commands.current, !f.awaitingChallenge else { return .none }
        let ms = loop.now - f.sentAt
        if case .att(let code)? = error { session.commandAnswered(CommandRejection(code) ?? .malformed) }
        if error == nil { session.commandAnswered(nil) }
        if case .att(let code)? = error, CommandRejection(code) == .staleChallenge, f.usedHeldChallenge, !f.retried {
            // The lock no longer holds the challenge read ahead (it restarted, or the link was
            // adopted anew): the same command once more, after a fresh read.
            emit(.phoneHeldChallengeRefused(op: .init(f.operation)))
            commands.sendAgain(retried: true)
            pump()
            return .sentAgain
        }
        switch error {
        case nil:
            emit(.phoneCommandOk(op: .init(f.operation), ms: ms))
            wakeWork.commandAccepted(f.operation)
            // The next report at rest, not one that overtook this answer: the bolt may still
            // be on its way (ChallengeReadAhead).
            if WakeWork.movesTheBolt(f.operation) { readAhead.awaitTheBolt() }
            finish(.success(()))
            return .answered(f.operation, nil)
        case .att(let code)?:
            let why = CommandRejection(code) ?? .malformed
            emit(.phoneCommandRefused(op: .init(f.operation), reason: .init(why)))
            finish(.failure(.rejected(why)))
            return .answered(f.operation, why)
        case let e?:
            finish(.failure(.notDelivered("\(e)")))
            return .notDelivered(f.operation)
        }
    }

    /// The command in flight fails with `why` (the setup starts again under it).
    func failInFlight(_ why: String) {
        if commands.current != nil { finish(.failure(.notDelivered(why))) }
    }

    /// The link went: every command fails.
    func failAll(_ why: String) {
        commands.failAll(why)
        if commands.isIdle { wakeWork.backgroundTasks.end(WakeWork.commandsTask) }
    }

    /// The command in flight ends: its caller hears, the next one starts.
    private func finish(_ result: Result<Void, PhoneAgent.CommandError>) {
        guard commands.finish(result) else { return }
        pump()
        if commands.isIdle { wakeWork.backgroundTasks.end(WakeWork.commandsTask) }
    }

    /// No answer within the challenge's lifetime: the request or its answer was lost (a lock
    /// that died and adopted the link again never saw it). Drop the link; the request that
    /// never times out forms a fresh one.
    private func commandTimedOut() {
        guard let f = commands.current else { return }
        emit(.phoneCommandTimeout(op: .init(f.operation)))
        finish(.failure(.notDelivered("no answer within \(configuration.commandTimeout)")))
        link.drop()
    }

    private func emit(_ event: Event) { events.emit(event) }
}
