/// One classic BPF instruction (`struct sock_filter`, linux/filter.h): what
/// `Syscalls.attachSocketFilter` hands the kernel.
package struct SocketFilterInstruction: Equatable {
    package var code: UInt16
    package var jumpIfTrue: UInt8 = 0
    package var jumpIfFalse: UInt8 = 0
    package var k: UInt32

    // Opcodes (linux/bpf_common.h): BPF_LD|BPF_B|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K.
    package static func loadByte(at offset: UInt32) -> Self { Self(code: 0x30, k: offset) }
    package static func jumpIfEqual(_ value: UInt32, true jt: UInt8, false jf: UInt8) -> Self {
        Self(code: 0x15, jumpIfTrue: jt, jumpIfFalse: jf, k: value)
    }
    package static func accept() -> Self { Self(code: 0x06, k: UInt32(UInt16.max)) }   // keep up to 64 KiB
    package static func drop() -> Self { Self(code: 0x06, k: 0) }
}

extension ConnectAttemptEvent {
    /// The LE Meta half of the watch's filter, which HCI_FILTER (event codes only) cannot express:
    /// only the connection completes (`connectionCompleteSubevents`) pass, and advertising reports
    /// are dropped by the kernel before they are queued, so they never wake the phone (in the HIL
    /// VM, scenario 11, a controller reporting other advertisers woke it once per advertisement
    /// without this; docs/LINUX-BLE.md, "What the HIL suite found"). Other events pass: HCI_FILTER
    /// already narrowed them. Packets: type octet, event code, length, then parameters; the
    /// subevent code is octet 3.
    package static var socketFilter: [SocketFilterInstruction] { leMetaFilter(passing: connectionCompleteSubevents) }

    /// LE Meta events pass only with one of `subevents`; events that are not LE Meta pass.
    package static func leMetaFilter(passing subevents: Set<UInt8>) -> [SocketFilterInstruction] {
        let subevents = subevents.sorted()
        let acceptIndex = 3 + subevents.count + 1   // after the loads, the tests and the drop
        var program: [SocketFilterInstruction] = [
            .loadByte(at: 1),
            .jumpIfEqual(UInt32(leMeta), true: 0, false: UInt8(acceptIndex - 2)),
            .loadByte(at: 3),
        ]
        for subevent in subevents {
            program.append(.jumpIfEqual(UInt32(subevent), true: UInt8(acceptIndex - program.count - 1), false: 0))
        }
        program += [.drop(), .accept()]
        return program
    }
}
