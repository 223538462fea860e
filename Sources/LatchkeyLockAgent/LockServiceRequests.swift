import LatchkeyATT
import LatchkeyEvents
import LatchkeyLockProtocol
import LatchkeySecurity
import LatchkeyTransport

/// A link's reads and writes on the lock service, each to the component that answers it, and
/// what a link must hold to ask: a command or a pairing request always gets an answer (a write
/// with response), and the log goes only to a link with a session, as far as its key may read
/// (`LockAuthority.logScope`, asked on the key as it is now).
final class LockServiceRequests<Link: LinkHandle> {
    private let links: LinkRegistry<Link>
    private let readState: (Link) -> Result<[UInt8], ATTErrorCode>
    private let challenge: (Link) -> [UInt8]
    private let pairingResponse: (LinkID) -> [UInt8]?
    private let command: ([UInt8], Link) -> CommandRejection?
    private let pairing: ([UInt8], Link) -> CommandRejection?
    private let logScope: (UInt32) -> LogScope?
    private let startTransfer: ([UInt8], Link, UInt32, LogScope) -> ATTErrorCode?
    private let emit: (Event) -> Void

    /// `challenge` issues a fresh challenge to the link; `startTransfer` starts a log transfer
    /// to a link with a session under a key with `scope`.
    init(links: LinkRegistry<Link>, readState: @escaping (Link) -> Result<[UInt8], ATTErrorCode>,
         challenge: @escaping (Link) -> [UInt8], pairingResponse: @escaping (LinkID) -> [UInt8]?,
         command: @escaping ([UInt8], Link) -> CommandRejection?, pairing: @escaping ([UInt8], Link) -> CommandRejection?,
         logScope: @escaping (UInt32) -> LogScope?, startTransfer: @escaping ([UInt8], Link, UInt32, LogScope) -> ATTErrorCode?,
         emit: @escaping (Event) -> Void) {
        self.links = links
        self.readState = readState
        self.challenge = challenge
        self.pairingResponse = pairingResponse
        self.command = command
        self.pairing = pairing
        self.logScope = logScope
        self.startTransfer = startTransfer
        self.emit = emit
    }

    func read(_ characteristic: BluetoothUUID, by central: Link) -> Result<[UInt8], ATTErrorCode> {
        switch characteristic {
        case LockServiceUUID.lockState:
            return readState(central)
        case LockServiceUUID.challenge:
            return .success(challenge(central))
        case LockServiceUUID.pairing:
            return pairingResponse(central.linkID).map { .success($0) } ?? .failure(.readNotPermitted)
        default:
            return .failure(.readNotPermitted)
        }
    }

    func write(_ value: [UInt8], to characteristic: BluetoothUUID, withResponse: Bool, by central: Link) -> ATTErrorCode? {
        switch characteristic {
        case LockServiceUUID.lockControl:
            guard withResponse else { return .writeNotPermitted }  // a command always gets an answer
            return command(value, central).map(\.attError)
        case LockServiceUUID.dataTransfer:
            return transfer(value, to: central)
        case LockServiceUUID.pairing:
            guard withResponse else { return .writeNotPermitted }
            return pairing(value, central).map(\.attError)
        default:
            return .writeNotPermitted
        }
    }

    private func transfer(_ bytes: [UInt8], to central: Link) -> ATTErrorCode? {
        // A malformed request is answered with its ATT error.
        guard let keyID = links.sessionKey(on: central.linkID) else {
            emit(.lockLogRefused(central: "\(central.identifier)", reason: "no session"))
            return CommandRejection.noSession.attError
        }
        // What the key may read is the authority's to say, on the key as it is now.
        guard let scope = logScope(keyID) else {
            emit(.lockLogRefused(central: "\(central.identifier)", key: keyID, reason: "key revoked"))
            return CommandRejection.unknownKey.attError
        }
        return startTransfer(bytes, central, keyID, scope)
    }
}
