import LatchkeyConfig
import LatchkeyTransport

/// Which radio an agent runs on, from its config file's `transport:` and `sim:` fields.
public enum TransportSettings: Equatable, Sendable {
    /// The shared simulated air (`latchkey air`), as device `address` at `position` metres.
    case sim(airSocket: String, address: BluetoothAddress, position: Double)
    /// The Linux kernel's Bluetooth stack on an adapter (hci0, ...).
    case kernel(adapter: String)

    package static func read(_ root: ConfigTable, defaultAirSocket: String) throws(ConfigError) -> TransportSettings {
        let kind = try root.choice("transport", ["sim", "kernel"]) ?? "sim"
        let sim = try root.table("sim")
        let adapter = try root.string("adapter", default: "hci0")
        switch kind {
        case "kernel":
            if let sim { try sim.finish() }
            return .kernel(adapter: adapter)
        default:
            guard let sim else {
                throw ConfigError(file: root.file, line: nil, field: "sim", message: "is required with transport: sim")
            }
            let socket = try sim.string("air_socket", default: defaultAirSocket)
            guard let address = try sim.parsed("address", expected: "an address like C0:FF:EE:00:00:01",
                                               { BluetoothAddress(string: $0) }) else {
                throw ConfigError(file: root.file, line: nil, field: "sim.address", message: "is required")
            }
            let position = try sim.parsed("position", expected: "a position in metres", { Double($0) }) ?? 0
            try sim.finish()
            return .sim(airSocket: socket, address: address, position: position)
        }
    }
}
