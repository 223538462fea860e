import LatchkeyATT
import LatchkeyGATT
import LatchkeyLockProtocol

/// The lock's GATT service definition. Values are dynamic: each read asks the agent.
public enum LockServiceDefinition {
    public static let service = GATTService(uuid: LockServiceUUID.service, characteristics: [
        GATTCharacteristic(uuid: LockServiceUUID.lockState, properties: [.read, .notify], permissions: .read,
                           descriptors: [.userDescription("Lock state")]),
        GATTCharacteristic(uuid: LockServiceUUID.lockControl, properties: [.write], permissions: .write,
                           descriptors: [.userDescription("Lock control")]),
        GATTCharacteristic(uuid: LockServiceUUID.challenge, properties: [.read], permissions: .read,
                           descriptors: [.userDescription("Challenge")]),
        GATTCharacteristic(uuid: LockServiceUUID.dataTransfer, properties: [.write, .notify], permissions: .write,
                           descriptors: [.userDescription("Event log transfer")]),
        GATTCharacteristic(uuid: LockServiceUUID.pairing, properties: [.read, .write], permissions: .readWrite,
                           descriptors: [.userDescription("Pairing")]),
    ])
}
