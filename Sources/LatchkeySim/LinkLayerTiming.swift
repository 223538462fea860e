import LatchkeyTransport

/// What the link layer spends before and around the ATT PDUs the hosts send: the setup the
/// kernel waits for before its first ATT PDU, and the airtime that bounds how many PDUs one
/// connection event carries. The figures are Core Vol 6 Part B's for the LE 1M PHY.
public enum LinkLayerTiming {
    /// Connection events after the link's first one that the link-layer setup takes before
    /// either host may send ATT: the kernel reads the peer's features (HCI LE Read Remote
    /// Features: LL_FEATURE_REQ in one event, LL_FEATURE_RSP in the next, 5.1.4) and only
    /// then tells L2CAP the link is up (hci_event.c, le_remote_feat_complete_evt →
    /// hci_connect_cfm). ATT PDUs queued earlier wait for the event after it.
    public static let setupEvents = 2

    /// T_IFS, the gap between two packets of one event (2.1).
    public static let interFrameSpace = Duration.microseconds(150)
    /// One byte on the LE 1M PHY.
    static let microsecondsPerByte: Int64 = 8
    /// Preamble (1), access address (4), data PDU header (2) and CRC (3) around every payload.
    static let framingBytes = 10
    /// The L2CAP basic header (length, channel ID) in front of each ATT PDU.
    static let l2capHeaderBytes = 4
    /// The largest LL data payload: the LE Data Length Extension's 251 bytes (4.5.10), which
    /// the sim assumes both controllers use (an ATT_MTU of 247 fits one packet).
    static let maximumPayload = 251

    /// Airtime of one LL data packet carrying `payload` bytes; an empty packet is 80 µs.
    static func airtime(payload: Int) -> Duration {
        .microseconds(Int64(framingBytes + payload) * microsecondsPerByte)
    }

    /// Airtime of the packets carrying one ATT PDU of `length` bytes.
    static func airtime(forATT length: Int) -> Duration {
        let total = length + l2capHeaderBytes
        let full = total / maximumPayload, rest = total % maximumPayload
        var time = airtime(payload: maximumPayload) * full
        if rest > 0 || full == 0 { time += airtime(payload: rest) }
        return time
    }

    /// Connection events from the one carrying LL_CONNECTION_UPDATE_IND to its instant: the
    /// central "should allow a minimum of 6 connection events that the Peripheral will be
    /// listening for before the instant occurs" (Core Vol 6 Part B 5.1.1).
    public static let updateInstantEvents = 6
    /// LL_CONNECTION_UPDATE_IND's payload: opcode and 11 octets of CtrData (2.4.2.1).
    static let connectionUpdatePayload = 12

    /// The exchange carrying the update's PDU, the peripheral answering with `peripheral`
    /// octets of ATT (or an empty packet).
    static func controlExchange(peripheral: Int?) -> Duration {
        airtime(payload: connectionUpdatePayload) + interFrameSpace
            + (peripheral.map { airtime(forATT: $0) } ?? airtime(payload: 0)) + interFrameSpace
    }

    /// How many ATT PDUs of `length` bytes one side can send in one connection event at
    /// `interval`, the other side answering with empty packets: the link's rate for a stream
    /// of notifications is this × their payload per interval.
    public static func pdusPerEvent(attLength length: Int, interval: Duration, packetsPerEvent: Int) -> Int {
        let cost = exchange(central: nil, peripheral: length)
        let budget = interval - interFrameSpace
        var n = 1, airtime = cost  // the first exchange always happens
        while n < packetsPerEvent, airtime + cost <= budget { n += 1; airtime += cost }
        return n
    }

    /// How long one exchange takes: the central's packet, T_IFS, the peripheral's answer
    /// (data or empty), T_IFS. Each side's next packet waits for the other's (4.5.1).
    static func exchange(central: Int?, peripheral: Int?) -> Duration {
        (central.map { airtime(forATT: $0) } ?? airtime(payload: 0)) + interFrameSpace
            + (peripheral.map { airtime(forATT: $0) } ?? airtime(payload: 0)) + interFrameSpace
    }
}
