import LatchkeyATT
import Testing

@Suite("Bluetooth UUIDs")
struct BluetoothUUIDTests {
    @Test("a 16-bit UUID equals its 128-bit form on the Base UUID")
    func shortFormEqualsLongForm() {
        let long = BluetoothUUID(string: "0000180F-0000-1000-8000-00805F9B34FB")!
        #expect(long == BluetoothUUID(0x180F))
        #expect(long.wireLength == 2)
        #expect(BluetoothUUID(0x180F).value128 == 0x0000_180F_0000_1000_8000_0080_5F9B_34FB)
        #expect(BluetoothUUID(value: BluetoothUUID(0x2A19).value128) == BluetoothUUID(0x2A19))
    }

    @Test("a UUID off the Base UUID stays 128-bit")
    func vendorUUIDStaysLong() {
        let u = BluetoothUUID(string: "8e3f0001-2c5d-4b6a-9c1e-7f4a2b3c4d5e")!
        #expect(u.wireLength == 16)
        #expect(u.description == "8E3F0001-2C5D-4B6A-9C1E-7F4A2B3C4D5E")
        // A 32-bit SIG UUID (upper 16 bits set) is not a 16-bit one.
        #expect(BluetoothUUID(string: "12345678-0000-1000-8000-00805F9B34FB")!.wireLength == 16)
    }

    @Test("wire form is little-endian, 2 or 16 octets")
    func wireForm() {
        #expect(BluetoothUUID(0x2800).littleEndianBytes == [0x00, 0x28])
        let u = BluetoothUUID(string: "00112233-4455-6677-8899-AABBCCDDEEFF")!
        #expect(u.littleEndianBytes == [0xFF, 0xEE, 0xDD, 0xCC, 0xBB, 0xAA, 0x99, 0x88,
                                        0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00])
        #expect(BluetoothUUID(littleEndian: u.littleEndianBytes) == u)
        #expect(BluetoothUUID(littleEndian: [0x0F, 0x18]) == BluetoothUUID(0x180F))
    }

    @Test("only 2 or 16 octets make a UUID; only 4 or 32 hex digits parse")
    func rejectsOtherLengths() {
        for n in [0, 1, 3, 4, 15, 17] {
            #expect(BluetoothUUID(littleEndian: [UInt8](repeating: 0xAB, count: n)) == nil)
        }
        #expect(BluetoothUUID(string: "18F") == nil)
        #expect(BluetoothUUID(string: "0000180F-0000-1000-8000-00805F9B34F") == nil)
        #expect(BluetoothUUID(string: "zzzz") == nil)
        #expect(BluetoothUUID(string: "180f") == BluetoothUUID(0x180F))
        #expect(BluetoothUUID(0x00AB).description == "00AB")
    }
}
