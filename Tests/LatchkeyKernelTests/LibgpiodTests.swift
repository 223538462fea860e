#if canImport(Glibc)
import Glibc
#endif
import CGPIOD
import LatchkeyLock
import LatchkeyPosix
import Testing

@testable import LatchkeyKernel

/// The libgpiod 1.6 backend: what can be shown without a GPIO chip (this kernel has none;
/// the HIL VM's gpio-sim chip shows the rest).
@Suite struct LibgpiodTests {
    @Test(.enabled(if: !hostHasGPIOChips, "this machine has GPIO chips"))
    func aMissingChipNamesTheLabelAndTheChipsThatExist() {
        let finder = LibgpiodChipFinder(loop: PosixEventLoop())
        let error = #expect(throws: GPIOError.self) { _ = try finder.chip(labelled: "pinctrl-bcm2711") }
        #expect(error?.code == .chipNotFound)
        #expect(error?.chip == "pinctrl-bcm2711")
        #expect(error.map { "\($0)" } == "GPIO chip not found on chip 'pinctrl-bcm2711': GPIO chips present: none")
    }

    @Test func requestFlagsCarryActiveLowAndOneBias() {
        let activeLow = Int32(truncatingIfNeeded: GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW)
        #expect(LibgpiodChip.requestFlags(GPIOLineConfig(consumer: "c")) == 0)
        #expect(LibgpiodChip.requestFlags(GPIOLineConfig(consumer: "c", activeLow: true)) == activeLow)
        #expect(LibgpiodChip.requestFlags(GPIOLineConfig(consumer: "c", activeLow: true, bias: .pullUp))
                == activeLow | Int32(truncatingIfNeeded: GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP))
        #expect(LibgpiodChip.requestFlags(GPIOLineConfig(consumer: "c", bias: .pullDown))
                == Int32(truncatingIfNeeded: GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN))
        #expect(LibgpiodChip.requestFlags(GPIOLineConfig(consumer: "c", bias: .disabled))
                == Int32(truncatingIfNeeded: GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE))
        // libgpiod 1.6 values (gpiod.h): ACTIVE_LOW bit 2, BIAS_DISABLE/PULL_DOWN/PULL_UP bits 3–5.
        #expect(activeLow == 1 << 2)
        #expect(GPIOFlag.biasPullUp == 1 << 5)
    }
}

let hostHasGPIOChips = !Syscalls.gpioChipNames().isEmpty
