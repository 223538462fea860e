import LatchkeyATT

/// The Latchkey lock service. 128-bit UUIDs from one random base, varying in the
/// first group: 4C4B00xx-0C1D-4E5A-9B3F-7A6C61746368 ("latch" in the tail).
public enum LockServiceUUID {
    static func make(_ n: UInt32) -> BluetoothUUID {
        BluetoothUUID(value: UInt128(n) << 96 | 0x0C1D_4E5A_9B3F_7A6C_6174_6368)
    }
    public static let service = make(0x4C4B_0001)
    /// Lock state: read + notify. Value: `LockStatus`.
    public static let lockState = make(0x4C4B_0002)
    /// Lock control: write (with response). Value: a sealed `CommandFrame`.
    public static let lockControl = make(0x4C4B_0003)
    /// Challenge: read. Each read issues a fresh single-use challenge for this link.
    public static let challenge = make(0x4C4B_0004)
    /// Data transfer (event log): write a `LogRequest`, receive chunked notifications.
    public static let dataTransfer = make(0x4C4B_0005)
    /// Pairing: write a `PairingRequest` (refused unless a window is open on the lock's
    /// side), then read this link's `PairingResponse`. docs/SECURITY.md.
    public static let pairing = make(0x4C4B_0006)
}
