#if canImport(Glibc)
import Glibc
#endif
import LatchkeyPosix
import Logging
import Testing

@testable import LatchkeyControl
@testable import LatchkeyDaemons

/// `transport: kernel` on a kernel without Bluetooth (this machine) is one sentence that
/// says what to do instead, not a trace.
@Suite struct KernelTransportSettingsTests {
    static let hostHasBluetooth: Bool = {
        var info = stat()
        return stat("/sys/class/bluetooth", &info) == 0
    }()

    @Test(.enabled(if: !hostHasBluetooth, "this kernel has Bluetooth"))
    func noBluetoothIsOneSentenceSuggestingTheSimulatedAir() {
        let error = #expect(throws: RuntimeError.self) {
            _ = try openTransport(.kernel(adapter: "hci0"), loop: PosixEventLoop(), role: "lock",
                                  logger: Logger(label: "test"))
        }
        let sentence = error?.description ?? ""
        #expect(sentence.hasPrefix("this kernel has no Bluetooth support ("))
        #expect(sentence.contains("use `transport: sim` with `latchkey air`"))
        #expect(!sentence.contains("\n"))
    }
}
