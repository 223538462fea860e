#if canImport(Glibc)
import Glibc
#endif
import CGPIOD
import LatchkeyGPIO
import LatchkeyLock
import LatchkeyPosix
import Testing

@testable import LatchkeyLibgpiod

/// The libgpiod backends and their loader: what can be shown without a GPIO chip (this
/// kernel has none; `LibgpiodBackendTests` drives both APIs through fake libraries, the HIL
/// VM's gpio-sim chip drives the real ones).
@Suite struct LibgpiodTests {
    @Test(.enabled(if: !hostHasGPIOChips, "this machine has GPIO chips"))
    func aMissingChipNamesTheLabelAndTheChipsThatExist() {
        let finder = LibgpiodChipFinder(loop: PosixEventLoop())
        let error = #expect(throws: GPIOError.self) { _ = try finder.chip(labelled: "pinctrl-bcm2711") }
        #expect(error?.code == .chipNotFound)
        #expect(error?.chip == "pinctrl-bcm2711")
        #expect(error.map { "\($0)" } == "GPIO chip not found on chip 'pinctrl-bcm2711': GPIO chips present: none")
    }

    @Test func v1RequestFlagsCarryActiveLowAndOneBias() {
        func flags(activeLow: Bool = false, _ bias: GPIOBias = .asIs) -> Int32 {
            Libgpiod1.requestFlags(GPIODRequest(direction: .output, consumer: "c", activeLow: activeLow, bias: bias))
        }
        // libgpiod 1.6 values (gpiod.h GPIOD_BIT(n)): ACTIVE_LOW bit 2, BIAS_DISABLE/PULL_DOWN/PULL_UP bits 3–5.
        #expect(flags() == 0)
        #expect(flags(activeLow: true) == 1 << 2)
        #expect(flags(activeLow: true, .pullUp) == 1 << 2 | 1 << 5)
        #expect(flags(.pullDown) == 1 << 4)
        #expect(flags(.disabled) == 1 << 3)
    }

    @Test func v2DebounceIsWholeMicrosecondsRoundedUp() {
        #expect(Libgpiod2.debounceMicroseconds(.zero) == 0)
        #expect(Libgpiod2.debounceMicroseconds(.milliseconds(20)) == 20_000)
        #expect(Libgpiod2.debounceMicroseconds(.nanoseconds(1)) == 1)
        #expect(Libgpiod2.debounceMicroseconds(.nanoseconds(-5)) == 0)
    }

    @Test func theLoaderPrefersLibgpiod2AndAnOverrideNamesOne() throws {
        #expect(try LibgpiodLoader.candidates(override: nil) == ["libgpiod.so.3", "libgpiod.so.2"])
        #expect(try LibgpiodLoader.candidates(override: "") == ["libgpiod.so.3", "libgpiod.so.2"])
        #expect(try LibgpiodLoader.candidates(override: "libgpiod.so.3") == ["libgpiod.so.3"])
        #expect(try LibgpiodLoader.candidates(override: "libgpiod.so.2") == ["libgpiod.so.2"])
        let error = #expect(throws: GPIOError.self) { _ = try LibgpiodLoader.candidates(override: "2") }
        #expect(error?.code == .libraryMissing)
        #expect(error?.detail == "LATCHKEY_GPIOD=2 is neither libgpiod.so.2 (libgpiod 1.6) nor libgpiod.so.3 (libgpiod 2.x)")
    }

    /// The real libraries: each loads and every function Latchkey calls resolves (dlsym), and
    /// it reports its own version. Where one is not installed the test says why it is absent;
    /// CI puts both on the path and sets LATCHKEY_REQUIRE_LIBGPIOD="libgpiod.so.2 libgpiod.so.3",
    /// which makes an absent library a failure (.ci/run).
    @Test(arguments: [("libgpiod.so.2", "libgpiod2", "libgpiod 1.6"), ("libgpiod.so.3", "libgpiod3", "libgpiod 2.")])
    func theInstalledLibraryLoadsWithEveryFunction(_ soname: String, _ package: String, _ version: String) {
        let required = (Syscalls.environment("LATCHKEY_REQUIRE_LIBGPIOD") ?? "").split(separator: " ")
            .contains(Substring(soname))
        switch LibgpiodLoader.load(override: soname) {
        case .success(let backend):
            #expect(backend.description.hasPrefix("\(soname) (\(version)"), "\(backend.description)")
            #expect(backend.debouncesInKernel == (soname == "libgpiod.so.3"))
        case .failure(let error):
            #expect(!required, "\(soname) is required here: \(error)")
            #expect(error.code == .libraryMissing)
            #expect(error.detail?.hasPrefix("install \(package) (") == true, "\(error)")
        }
    }
}

let hostHasGPIOChips = !Syscalls.gpioChipNames().isEmpty
