// latchkey-bench: how fast the pure ATT/GATT core and the store run. Not a test; run it with
//   swift run -c release latchkey-bench
// Targets (from the issue): at least 100,000 request/response round trips per second
// through the GATT server and client state machines on a 2-core CI machine, and no
// allocation per PDU on the decode path.

let roundTrips = 200_000
let decodePasses = 100_000

let readPair = WiredPair()
let reads = measure(operations: roundTrips) { blackHole(readRoundTrips(readPair, count: roundTrips)) }
let writePair = WiredPair()
let writes = measure(operations: roundTrips) { blackHole(writeRoundTrips(writePair, count: roundTrips)) }
let mix = RequestMix()
let decodes = measure(operations: decodePasses * mix.ranges.count) { blackHole(decodeMix(mix, passes: decodePasses)) }
let countsMallocs = mallocCounterWorks()

/// A positive figure with thousands separators, or with `decimals` decimals.
/// (Rounding by hand: `rounded()` would need libm, which nothing else here links.)
func figure(_ v: Double, decimals: Int = 0) -> String {
    if decimals > 0 {
        let scale = (0..<decimals).reduce(1) { r, _ in r * 10 }
        let scaled = Int(v * Double(scale) + 0.5)
        let fraction = String(scaled % scale)
        return String(scaled / scale) + "." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }
    var digits = String(Int(v + 0.5))
    var out = ""
    while digits.count > 3 {
        out = "," + digits.suffix(3) + out
        digits.removeLast(3)
    }
    return digits + out
}

func row(_ what: String, _ value: String, _ target: String, _ ok: Bool?) {
    let verdict: String = ok.map { $0 ? "ok" : "MISSED" } ?? ""
    let name: String = what + String(repeating: " ", count: max(0, 44 - what.count))
    let alignedValue: String = String(repeating: " ", count: max(0, 14 - value.count)) + value
    let goal: String = target + String(repeating: " ", count: max(0, 14 - target.count))
    print(name + alignedValue + "   " + goal + verdict)
}

let mallocFigure: (Run) -> String = { countsMallocs ? figure($0.mallocsPerOperation, decimals: 2) : "n/a" }
let decodeMB = Double(decodePasses * mix.octetsPerPass) / decodes.seconds / 1e6

print("latchkey-bench: ATT/GATT core, in-process, one thread, ATT_MTU 23, best of 5 runs")
print("")
row("measure", "figure", "target", nil)
row(String(repeating: "-", count: 42), String(repeating: "-", count: 12), String(repeating: "-", count: 12), nil)
row("GATT read round trips/s", figure(reads.perSecond), ">= 100,000", reads.perSecond >= 100_000)
row("GATT write round trips/s", figure(writes.perSecond), ">= 100,000", writes.perSecond >= 100_000)
row("ATT decodes/s (\(mix.ranges.count)-request mix)", figure(decodes.perSecond), "", nil)
row("ATT decode throughput, MB/s", figure(decodeMB, decimals: 1), "", nil)
row("allocations per decode", mallocFigure(decodes), "0", countsMallocs ? decodes.mallocs == 0 : nil)
row("allocations per read round trip (info)", mallocFigure(reads), "", nil)
row("allocations per write round trip (info)", mallocFigure(writes), "", nil)
if !countsMallocs {
    print("\n(malloc calls not counted: the linker did not export the counting malloc)")
}
storeRows()
print("\n(will-restore-state after a lock process starts, with 10,000 log rows: `latchkey-torture` measures it")
print(" at every restart of the real process)")
