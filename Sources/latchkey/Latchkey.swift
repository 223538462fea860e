import ArgumentParser
import LatchkeyConfig
import LatchkeyRuntime

@main
struct Latchkey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey",
        abstract: "A Bluetooth LE smart lock for Pi-class Linux, and the phone agent that opens it when you come home.",
        subcommands: [Demo.self, Lock.self, Phone.self, Air.self, Status.self, Log.self, Keys.self, PhoneCtl.self,
                      LockCtl.self, Pair.self, Doctor.self, GPIOSim.self])
}
