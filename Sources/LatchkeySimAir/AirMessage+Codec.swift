import LatchkeyTransport

extension AirMessage {
    /// The first byte of every message. Append only: the value is the wire format.
    enum Kind: UInt8 {
        case helloAgent = 0x01, helloControl = 0x02
        case startAdvertising = 0x10, stopAdvertising, startScanning, stopScanning
        case addPendingConnection, removePendingConnection, setConnectionParameters
        case linkSend = 0x20, linkDisconnect, linkClaim, linkRelease, linkRequestInterval
        case setPosition = 0x30, powerOff, powerOn, listDevices
        case welcome = 0x80, status, advertisementReport, linkUp, linkReceived, linkAccepted, linkDown
        case commandFailed, rejected, linkInterval
        case done = 0x90, failed, devices
    }

    public func encoded() -> [UInt8] {
        var w = WireWriter()
        switch self {
        case .helloAgent(let version, let address, let position):
            w.u8(Kind.helloAgent.rawValue); w.u8(version); w.address(address); w.optional(position) { $0.double($1) }
        case .helloControl(let version): w.u8(Kind.helloControl.rawValue); w.u8(version)
        case .startAdvertising(let a): w.u8(Kind.startAdvertising.rawValue); w.advertisement(a)
        case .stopAdvertising: w.u8(Kind.stopAdvertising.rawValue)
        case .startScanning(let p): w.u8(Kind.startScanning.rawValue); w.scanParameters(p)
        case .stopScanning: w.u8(Kind.stopScanning.rawValue)
        case .addPendingConnection(let a): w.u8(Kind.addPendingConnection.rawValue); w.address(a)
        case .removePendingConnection(let a): w.u8(Kind.removePendingConnection.rawValue); w.address(a)
        case .setConnectionParameters(let p): w.u8(Kind.setConnectionParameters.rawValue); w.connectionParameters(p)
        case .linkSend(let id, let pdu): w.u8(Kind.linkSend.rawValue); w.linkID(id); w.data(pdu)
        case .linkDisconnect(let id): w.u8(Kind.linkDisconnect.rawValue); w.linkID(id)
        case .linkClaim(let id): w.u8(Kind.linkClaim.rawValue); w.linkID(id)
        case .linkRelease(let id): w.u8(Kind.linkRelease.rawValue); w.linkID(id)
        case .linkRequestInterval(let id, let d): w.u8(Kind.linkRequestInterval.rawValue); w.linkID(id); w.duration(d)
        case .linkInterval(let id, let d): w.u8(Kind.linkInterval.rawValue); w.linkID(id); w.duration(d)
        case .welcome(let version, let status, let links):
            w.u8(Kind.welcome.rawValue); w.u8(version); w.status(status); w.list(links) { $0.linkDescription($1) }
        case .status(let s, let processed): w.u8(Kind.status.rawValue); w.status(s); w.u32(processed)
        case .advertisementReport(let r): w.u8(Kind.advertisementReport.rawValue); w.report(r)
        case .linkUp(let l): w.u8(Kind.linkUp.rawValue); w.linkDescription(l)
        case .linkReceived(let id, let pdu): w.u8(Kind.linkReceived.rawValue); w.linkID(id); w.data(pdu)
        case .linkAccepted(let id, let count): w.u8(Kind.linkAccepted.rawValue); w.linkID(id); w.u16(count)
        case .linkDown(let id, let reason): w.u8(Kind.linkDown.rawValue); w.linkID(id); w.u8(reason.rawValue)
        case .commandFailed(let e): w.u8(Kind.commandFailed.rawValue); w.transportError(e)
        case .rejected(let reason): w.u8(Kind.rejected.rawValue); w.string(reason)
        case .setPosition(let request, let address, let position):
            w.u8(Kind.setPosition.rawValue); w.u32(request); w.address(address); w.double(position)
        case .powerOff(let request, let address): w.u8(Kind.powerOff.rawValue); w.u32(request); w.address(address)
        case .powerOn(let request, let address): w.u8(Kind.powerOn.rawValue); w.u32(request); w.address(address)
        case .listDevices(let request): w.u8(Kind.listDevices.rawValue); w.u32(request)
        case .done(let request): w.u8(Kind.done.rawValue); w.u32(request)
        case .failed(let request, let reason): w.u8(Kind.failed.rawValue); w.u32(request); w.string(reason)
        case .devices(let request, let devices):
            w.u8(Kind.devices.rawValue); w.u32(request); w.list(devices) { $0.device($1) }
        }
        return w.bytes
    }

    /// Decodes one whole message; anything short, long, unknown or out of range throws.
    public init(decoding bytes: [UInt8]) throws(AirProtocolError) {
        var r = WireReader(bytes)
        guard let kind = Kind(rawValue: try r.u8()) else {
            throw AirProtocolError(.unknownMessage, "kind 0x" + String(bytes[0], radix: 16))
        }
        switch kind {
        case .helloAgent:
            self = .helloAgent(version: try r.u8(), address: try r.address(),
                               position: try r.optional { r throws(AirProtocolError) in try r.double() })
        case .helloControl: self = .helloControl(version: try r.u8())
        case .startAdvertising: self = .startAdvertising(try r.advertisement())
        case .stopAdvertising: self = .stopAdvertising
        case .startScanning: self = .startScanning(try r.scanParameters())
        case .stopScanning: self = .stopScanning
        case .addPendingConnection: self = .addPendingConnection(try r.address())
        case .removePendingConnection: self = .removePendingConnection(try r.address())
        case .setConnectionParameters: self = .setConnectionParameters(try r.connectionParameters())
        case .linkSend: self = .linkSend(try r.linkID(), try r.data())
        case .linkDisconnect: self = .linkDisconnect(try r.linkID())
        case .linkClaim: self = .linkClaim(try r.linkID())
        case .linkRelease: self = .linkRelease(try r.linkID())
        case .linkRequestInterval: self = .linkRequestInterval(try r.linkID(), try r.duration())
        case .linkInterval: self = .linkInterval(try r.linkID(), try r.duration())
        case .welcome:
            self = .welcome(version: try r.u8(), status: try r.status(),
                            links: try r.list { r throws(AirProtocolError) in try r.linkDescription() })
        case .status: self = .status(try r.status(), commandsProcessed: try r.u32())
        case .advertisementReport: self = .advertisementReport(try r.report())
        case .linkUp: self = .linkUp(try r.linkDescription())
        case .linkReceived: self = .linkReceived(try r.linkID(), try r.data())
        case .linkAccepted: self = .linkAccepted(try r.linkID(), count: try r.u16())
        case .linkDown: self = .linkDown(try r.linkID(), DisconnectReason(rawValue: try r.u8()))
        case .commandFailed: self = .commandFailed(try r.transportError())
        case .rejected: self = .rejected(try r.string())
        case .setPosition: self = .setPosition(request: try r.u32(), address: try r.address(), position: try r.double())
        case .powerOff: self = .powerOff(request: try r.u32(), address: try r.address())
        case .powerOn: self = .powerOn(request: try r.u32(), address: try r.address())
        case .listDevices: self = .listDevices(request: try r.u32())
        case .done: self = .done(request: try r.u32())
        case .failed: self = .failed(request: try r.u32(), reason: try r.string())
        case .devices:
            self = .devices(request: try r.u32(), try r.list { r throws(AirProtocolError) in try r.device() })
        }
        try r.finish()
    }
}
