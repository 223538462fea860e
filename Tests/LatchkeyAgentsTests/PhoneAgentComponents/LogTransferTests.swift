import LatchkeyEvents
import LatchkeyGATT
import LatchkeyLock
import LatchkeyLockProtocol
import LatchkeyManagers
@testable import LatchkeyPhoneAgent
import Testing

/// The log transfer alone: its steps on the link, reassembly, its silence watch, one fetch at a time.
struct LogTransferTests {
    static let event = LockEvent(kind: .doorStateChange(.closed), time: .zero, lockStateBefore: .locked,
                                 lockStateAfter: .locked, doorState: .closed)

    /// A reply carrying `sequence`'s event, in chunks of `mtu`.
    func chunks(_ sequence: UInt32, mtu: Int = 23) -> [[UInt8]] {
        var payload: [UInt8] = []
        LogTransferRecord.append(sequence: sequence, event: Self.event.encoded, to: &payload)
        var sender = ChunkedSender(value: payload, mtu: mtu)
        var out: [[UInt8]] = []
        while let c = sender.peek() { out.append(c); sender.advance() }
        return out
    }

    @Test func aFetchSubscribesFirstThenWritesAndReassembles() throws {
        let rig = PhoneComponentRig()
        let transfer = LogTransfer(events: rig.output)
        var result: PhoneAgent.LogResult?
        #expect(transfer.start(from: 7, limit: 10, notifying: false) { result = $0 } == .subscribe)
        #expect(transfer.isRunning)
        #expect(transfer.subscriptionChanged(error: nil) == .write(LogRequest(fromSequence: 7, maximumCount: 10).bytes))
        transfer.requestWritten(error: nil)
        let parts = chunks(7)
        #expect(parts.count > 1)
        for (i, c) in parts.enumerated() {
            rig.loop.advance(by: .milliseconds(10))
            transfer.receive(c) { $0 }
            #expect(transfer.isRunning == (i < parts.count - 1))
        }
        let events = try #require(try result?.get())
        #expect(events.map(\.sequence) == [7] && events.first?.event == Self.event)
        let figures = try #require(transfer.lastFigures)
        #expect(figures.notifications == parts.count && figures.octets == parts.reduce(0) { $0 + $1.count })
        #expect(figures.firstChunk == .milliseconds(10) && figures.elapsed == .milliseconds(10 * parts.count))
    }

    @Test func aSecondFetchIsRefusedAndTheFirstStillAnswers() {
        let rig = PhoneComponentRig()
        let transfer = LogTransfer(events: rig.output)
        var first: PhoneAgent.LogResult?
        var second: PhoneAgent.LogResult?
        #expect(transfer.start(from: 1, limit: 5, notifying: true) { first = $0 } != .nothing)
        #expect(transfer.start(from: 1, limit: 5, notifying: true) { second = $0 } == .nothing)
        guard case .failure(.notDelivered(let why))? = second else { Issue.record("\(String(describing: second))"); return }
        #expect(why == "a log fetch is running")
        for c in chunks(1) { transfer.receive(c) { $0 } }
        #expect((try? first?.get())?.count == 1)
    }

    @Test func aReplyThatDoesNotOpenFailsTheFetch() {
        let rig = PhoneComponentRig()
        let transfer = LogTransfer(events: rig.output)
        var result: PhoneAgent.LogResult?
        _ = transfer.start(from: 1, limit: 5, notifying: true) { result = $0 }
        for c in chunks(1) { transfer.receive(c) { _ in nil } }
        guard case .failure(.notDelivered(let why))? = result else { Issue.record("\(String(describing: result))"); return }
        #expect(why == "log transfer not sealed to this link's session")
        #expect(!transfer.isRunning)
    }

    @Test func silenceEndsTheFetchAndEachChunkRearmsTheWatch() {
        let rig = PhoneComponentRig()
        let transfer = LogTransfer(events: rig.output)
        var result: PhoneAgent.LogResult?
        _ = transfer.start(from: 1, limit: 5, notifying: true) { result = $0 }
        let parts = chunks(1)
        rig.loop.advance(by: LogTransfer.silence - .milliseconds(1))
        transfer.receive(parts[0]) { $0 }
        rig.loop.advance(by: LogTransfer.silence - .milliseconds(1))
        #expect(result == nil)
        rig.loop.advance(by: .milliseconds(1))
        guard case .failure(.notDelivered)? = result else { Issue.record("\(String(describing: result))"); return }
        let timeout = rig.sink.events.filter { $0.name == EventKind.phoneLogFetchTimeout.name }
        #expect(timeout.count == 1 && timeout.first?.field("received") == "\(parts[0].count)")
        #expect(rig.loop.pendingCount == 0)
    }

    @Test func aFailedSubscriptionOrRequestOrLostLinkEndsTheFetchOnce() {
        let rig = PhoneComponentRig()
        let transfer = LogTransfer(events: rig.output)
        var answers = 0
        _ = transfer.start(from: 1, limit: 5, notifying: false) { _ in answers += 1 }
        #expect(transfer.subscriptionChanged(error: .att(.insufficientAuthentication)) == .nothing)
        _ = transfer.start(from: 1, limit: 5, notifying: true) { _ in answers += 1 }
        transfer.requestWritten(error: .att(.unlikelyError))
        _ = transfer.start(from: 1, limit: 5, notifying: true) { _ in answers += 1 }
        transfer.abandon("link lost")
        transfer.abandon("link lost")
        #expect(answers == 3 && !transfer.isRunning)
    }
}
