import ArgumentParser
import LatchkeyBuildInfo
import LatchkeyConfig
import LatchkeyRuntime

// Every command names itself (`commandName:`): otherwise ArgumentParser derives each name with
// `String(describing: Self.self)`, whose dynamic casts scan all the protocol conformances in
// the binary, for every command at every start — a third of an agent's start-up CPU (perf).
@main
struct Latchkey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latchkey",
        abstract: "A Bluetooth LE smart lock for Pi-class Linux, and the phone agent that opens it when you come home.",
        // `latchkey --version`: the release and the commit this binary was built from.
        version: BuildInfo.versionLine,
        subcommands: [Demo.self, Lock.self, Phone.self, Air.self, Status.self, Log.self, Keys.self, PhoneCtl.self,
                      LockCtl.self, Pair.self, Doctor.self, GPIOSim.self, MQTT.self])
}
