import LatchkeyGPIO
import LatchkeyLock
import Testing

@testable import LatchkeyLibgpiod

/// The doctor's read-only look at a chip: without GPIO chips (this machine) it fails the
/// way the finder does, listing what exists; with gpio-sim (the HIL VM) it lists lines.
@Suite struct GPIOInventoryTests {
    @Test(.enabled(if: !hostHasGPIOChips, "this machine has GPIO chips"))
    func aMissingChipListsTheChipsThatExist() {
        let error = #expect(throws: GPIOError.self) { _ = try GPIOInventory.lines(ofChipLabelled: "pinctrl-rp1") }
        #expect(error?.code == .chipNotFound)
        #expect(error?.detail == "GPIO chips present: none")
    }
}
