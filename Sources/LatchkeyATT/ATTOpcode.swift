/// ATT opcodes (Core Spec v5.4, Vol 3, Part F, 3.4.8 table 3.37).
public struct ATTOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let errorResponse = Self(rawValue: 0x01)
    public static let exchangeMTURequest = Self(rawValue: 0x02)
    public static let exchangeMTUResponse = Self(rawValue: 0x03)
    public static let findInformationRequest = Self(rawValue: 0x04)
    public static let findInformationResponse = Self(rawValue: 0x05)
    public static let findByTypeValueRequest = Self(rawValue: 0x06)
    public static let findByTypeValueResponse = Self(rawValue: 0x07)
    public static let readByTypeRequest = Self(rawValue: 0x08)
    public static let readByTypeResponse = Self(rawValue: 0x09)
    public static let readRequest = Self(rawValue: 0x0A)
    public static let readResponse = Self(rawValue: 0x0B)
    public static let readBlobRequest = Self(rawValue: 0x0C)
    public static let readBlobResponse = Self(rawValue: 0x0D)
    public static let readMultipleRequest = Self(rawValue: 0x0E)
    public static let readMultipleResponse = Self(rawValue: 0x0F)
    public static let readByGroupTypeRequest = Self(rawValue: 0x10)
    public static let readByGroupTypeResponse = Self(rawValue: 0x11)
    public static let writeRequest = Self(rawValue: 0x12)
    public static let writeResponse = Self(rawValue: 0x13)
    public static let prepareWriteRequest = Self(rawValue: 0x16)
    public static let prepareWriteResponse = Self(rawValue: 0x17)
    public static let executeWriteRequest = Self(rawValue: 0x18)
    public static let executeWriteResponse = Self(rawValue: 0x19)
    public static let handleValueNotification = Self(rawValue: 0x1B)
    public static let handleValueIndication = Self(rawValue: 0x1D)
    public static let handleValueConfirmation = Self(rawValue: 0x1E)
    public static let writeCommand = Self(rawValue: 0x52)
    public static let signedWriteCommand = Self(rawValue: 0xD2)

    /// Bit 6: a command, which gets no response, and which a server that does not
    /// understand it silently drops (3.3.1: "Command Flag").
    public var isCommand: Bool { rawValue & 0x40 != 0 }

    /// Whether this opcode is a request that a server must answer (with its response or an Error Response).
    public var isRequest: Bool {
        switch self {
        case .exchangeMTURequest, .findInformationRequest, .findByTypeValueRequest, .readByTypeRequest,
             .readRequest, .readBlobRequest, .readMultipleRequest, .readByGroupTypeRequest, .writeRequest,
             .prepareWriteRequest, .executeWriteRequest:
            return true
        default:
            return false
        }
    }

    /// Whether this opcode travels from server to client (responses, notifications, indications).
    public var isServerToClient: Bool {
        switch self {
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .findByTypeValueResponse,
             .readByTypeResponse, .readResponse, .readBlobResponse, .readMultipleResponse,
             .readByGroupTypeResponse, .writeResponse, .prepareWriteResponse, .executeWriteResponse,
             .handleValueNotification, .handleValueIndication:
            return true
        default:
            return false
        }
    }

    /// The response opcode that answers this request, if it is one.
    public var responseOpcode: ATTOpcode? { isRequest ? ATTOpcode(rawValue: rawValue + 1) : nil }

    public var description: String {
        let names: [UInt8: String] = [
            0x01: "Error Response", 0x02: "Exchange MTU Request", 0x03: "Exchange MTU Response",
            0x04: "Find Information Request", 0x05: "Find Information Response",
            0x06: "Find By Type Value Request", 0x07: "Find By Type Value Response",
            0x08: "Read By Type Request", 0x09: "Read By Type Response", 0x0A: "Read Request",
            0x0B: "Read Response", 0x0C: "Read Blob Request", 0x0D: "Read Blob Response",
            0x0E: "Read Multiple Request", 0x0F: "Read Multiple Response",
            0x10: "Read By Group Type Request", 0x11: "Read By Group Type Response", 0x12: "Write Request",
            0x13: "Write Response", 0x16: "Prepare Write Request", 0x17: "Prepare Write Response",
            0x18: "Execute Write Request", 0x19: "Execute Write Response",
            0x1B: "Handle Value Notification", 0x1D: "Handle Value Indication",
            0x1E: "Handle Value Confirmation", 0x52: "Write Command", 0xD2: "Signed Write Command",
        ]
        return names[rawValue] ?? "opcode 0x" + String(rawValue, radix: 16)
    }
}
