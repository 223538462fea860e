// libFuzzer target: the GATT server's PDU handler (LatchkeyGATT) over the large fixture
// database, with the Generic Attribute service in its gap at 0x0006–0x000D. The input is a
// sequence of PDUs, each prefixed by its length (one octet), fed to one server in order, so
// state carried between PDUs (MTU, prepare queue, CCCDs, Client Supported Features) is
// reached too; an input that starts with an empty PDU (octet 0) starts the client
// change-unaware with Robust Caching, so the Database Out Of Sync gate is fuzzed as well.
// Invariants, per PDU (Vol 3, Part F, 3.3 and 3.4.1.1):
// - a command (opcode bit 6) is never answered;
// - a request gets exactly one answer: its response, or an Error Response naming it;
// - every answer decodes and fits the ATT_MTU in force.
import FuzzSupport
import LatchkeyATT
import LatchkeyGATT
import LatchkeyTestKit

/// Built once. Each input is served from a copy (`Fixture.copy`: the database copied on
/// write), so it pays for what its writes change, not for building the large fixture and
/// its hash: building one per input held the target at about 500 exec/s.
nonisolated(unsafe) let pristine: Fixture = {
    let fixture = Fixture.large()
    _ = try? fixture.database.add(GenericAttributeService.definition, startHandle: 0x0006)
    _ = fixture.database.hash  // computed once, carried by every copy
    return fixture
}()

func serve(_ input: [UInt8]) {
    let fixture = pristine.copy()
    let server = GATTServer(database: fixture.database, preferredMTU: 517)
    server.delegate = fixture.delegate
    if input.first == 0 {
        server.restoreClientFeatures(.robustCaching)
        server.markChangeUnaware()
    }
    // One answer buffer for the whole input (`handle(_:into:)` keeps its capacity): an
    // allocation per answered PDU was two thirds of the target's allocations.
    var answer: [UInt8] = []
    answer.reserveCapacity(server.preferredMTU)
    var i = 0
    while i < input.count {
        let n = Int(input[i])
        // A slice of the input, not a copy: the server takes slices (one allocation fewer per PDU).
        let pdu = input[(i + 1)..<min(input.count, i + 1 + n)]
        i += 1 + n
        guard let first = pdu.first else { continue }
        let op = ATTOpcode(rawValue: first)
        let answered = server.handle(pdu, into: &answer)
        if op.isCommand {
            FuzzDriver.check(!answered, "command \(Array(pdu)) answered \(answer)")
            continue
        }
        guard op.isRequest else { continue }
        guard answered else { FuzzDriver.check(false, "request \(Array(pdu)) not answered"); return }
        FuzzDriver.check(answer.count <= server.mtu, "answer of \(answer.count) octets, ATT_MTU \(server.mtu)")
        guard let response = try? ATTPDU(decoding: answer[...]) else {
            FuzzDriver.check(false, "answer \(answer) to \(Array(pdu)) does not decode"); return
        }
        if case .errorResponse(let request, _, _) = response {
            FuzzDriver.check(request == op, "error response names \(request), not \(op)")
        } else {
            FuzzDriver.check(response.opcode == op.responseOpcode, "\(op) answered with \(response.opcode)")
        }
    }
}

/// A sequence of PDUs in the target's input format.
func sequence(_ pdus: [[UInt8]]) -> [UInt8] { pdus.flatMap { [UInt8($0.count)] + $0 } }

/// libFuzzer's callback. Its C name also satisfies libFuzzer's own `main` object, which the
/// link pulls in even though `main.swift`'s main runs (SwiftPM points `main` at it).
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    serve(FuzzDriver.bytes(data, size))
    return 0
}

FuzzDriver.main(seeds: {
    let L = LargeDB.self
    func le(_ h: UInt16) -> [UInt8] { [UInt8(h & 0xFF), UInt8(h >> 8)] }
    // The exchanges the GATT tests script, as sequences (LatchkeyTestKit's fixture handles).
    var seeds: [[UInt8]] = [
        sequence([[0x02, 0x05, 0x02]]),                                           // Exchange MTU 517
        sequence([[0x10, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28]]),                   // primary services
        sequence([[0x08, 0x01, 0x00, 0xFF, 0xFF, 0x03, 0x28]]),                   // characteristics
        sequence([[0x04, 0x01, 0x00, 0xFF, 0xFF]]),                               // find information
        sequence([[0x06, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x28, 0x0F, 0x18]]),       // find by type value
        sequence([[0x0A] + le(L.batteryLevel)]),                                  // read
        sequence([[0x02, 0x05, 0x02], [0x0C] + le(L.eventLog) + [0x10, 0x00]]),   // read blob
        sequence([[0x0E] + le(L.batteryLevel) + le(L.deviceName)]),               // read multiple
        sequence([[0x12] + le(L.eventLog) + [1, 2, 3]]),                          // write
        sequence([[0x52] + le(L.eventLog) + [4, 5]]),                             // write command
        sequence([[0x12] + le(L.batteryCCCD) + [0x01, 0x00]]),                    // subscribe
        sequence([[0x16] + le(L.eventLog) + [0x00, 0x00, 9, 9], [0x16] + le(L.eventLog) + [0x02, 0x00, 8],
                  [0x18, 0x01]]),                                                 // prepared write, execute
        sequence([[0x16] + le(L.eventLog) + [0x00, 0x00, 7], [0x18, 0x00]]),      // prepared write, cancel
        sequence([[0x0A] + le(L.secret), [0x0A] + le(L.encrypted)]),              // permission errors
    ]
    // And random well-formed requests and commands (LatchkeyTestKit.RandomPDU), three at a time.
    var g = SeededGenerator(seed: 0x4741_5454)
    let requests = RandomPDU.allOpcodes.filter { $0.isRequest || $0.isCommand }
    for _ in 0..<20 {
        seeds.append(sequence((0..<3).map { _ in
            Array(RandomPDU.make(requests.randomElement(using: &g)!, using: &g).bytes.prefix(255))
        }))
    }
    // The Generic Attribute service at 0x0006: Client Supported Features (0x000B), Service
    // Changed's CCCD (0x0009), the Database Hash by UUID; then, change-unaware (the leading
    // empty PDU), Database Out Of Sync once and the hash read.
    seeds += [
        sequence([[0x12, 0x0B, 0x00, 0x01], [0x12, 0x09, 0x00, 0x02, 0x00], [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x2A, 0x2B]]),
        sequence([[], [0x0A] + le(L.batteryLevel), [0x0A] + le(L.batteryLevel)]),
        sequence([[], [0x52] + le(L.eventLog) + [4, 5], [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x2A, 0x2B]]),
    ]
    return seeds
}, testOneInput)
