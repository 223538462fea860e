"""A second implementation of the Latchkey phone protocol, written from docs/PROTOCOL.md.

It uses the `cryptography` package for X25519, HKDF-SHA256 and ChaCha20-Poly1305 and the
standard library for the rest. It never calls Latchkey's own code: the frames, the key
derivations and the simulated air's client protocol are implemented here from the document,
so that a disagreement between the document and the lock shows up as a failing check.
"""

import hashlib
import hmac
import socket
import struct
import time

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


class Malformed(Exception):
    """Octets that are not the frame they should be (PROTOCOL.md: strict parsing)."""


class Refused(Exception):
    """The lock answered a request with an ATT error."""

    def __init__(self, code, what):
        super().__init__(f"{what}: ATT error 0x{code:02X} ({REJECTIONS.get(code, 'ATT')})")
        self.code = code


# PROTOCOL.md, "The GATT service": 4C4B00xx-0C1D-4E5A-9B3F-7A6C61746368.
def lock_uuid(n):
    return f"4c4b{n:04x}-0c1d-4e5a-9b3f-7a6c61746368"


SERVICE = lock_uuid(1)
LOCK_STATE = lock_uuid(2)
LOCK_CONTROL = lock_uuid(3)
CHALLENGE = lock_uuid(4)
DATA_TRANSFER = lock_uuid(5)
PAIRING = lock_uuid(6)

# PROTOCOL.md, "Error codes".
REJECTIONS = {
    0x80: "malformed", 0x81: "revoked key", 0x82: "authentication failed", 0x83: "stale challenge",
    0x84: "replayed counter", 0x85: "not authorized", 0x86: "locked out", 0x87: "refused by policy",
    0x88: "actuator disabled", 0x89: "storage failure", 0x8A: "pairing window closed", 0x8B: "busy",
    0x8C: "no session",
}

OPERATIONS = {"lock": 1, "unlock": 2, "unlock-with-timeout": 3, "arrival-unlock": 4, "present": 5,
              "set-operating-mode": 6}
OPERATION_NAMES = {v: k for k, v in OPERATIONS.items()}


def hkdf_sha256(ikm, salt, info, length=32):
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(ikm)


# ---------------------------------------------------------------- commands

def challenge_grant(octets):
    """The challenge characteristic's value: 16 octets, then the lifetime in ms (u16 BE)."""
    if len(octets) != 18:
        raise Malformed(f"challenge grant of {len(octets)} octets")
    return octets[:16], struct.unpack(">H", octets[16:])[0]


def command_body(operation, command_id, timeout_s=None, operating_mode=None):
    op = OPERATIONS[operation] if isinstance(operation, str) else operation
    body = bytes([op]) + struct.pack(">Q", command_id)
    if op == 3:
        body += struct.pack(">H", timeout_s)
    if op == 6:
        body += bytes([operating_mode])
    return body


def parse_body(body):
    if len(body) < 9 or body[0] not in OPERATION_NAMES:
        raise Malformed("command body")
    op = body[0]
    want = {3: 11, 6: 10}.get(op, 9)
    if len(body) != want:
        raise Malformed(f"command body of {len(body)} octets for operation {op}")
    out = {"operation": OPERATION_NAMES[op], "command_id": struct.unpack(">Q", body[1:9])[0]}
    if op == 3:
        out["timeout_s"] = struct.unpack(">H", body[9:11])[0]
        if out["timeout_s"] == 0:
            raise Malformed("unlock timeout of 0 s")
    if op == 6:
        out["operating_mode"] = body[9]
    return out


def command_header(key_id, counter, challenge, nonce):
    """Octets 0..41 of a command frame, which are also its AEAD associated data."""
    assert len(challenge) == 16 and len(nonce) == 12
    return bytes([0x01, 0x01]) + struct.pack(">IQ", key_id, counter) + challenge + nonce


def seal_command(secret, key_id, counter, challenge, nonce, body):
    header = command_header(key_id, counter, challenge, nonce)
    return header + ChaCha20Poly1305(secret).encrypt(nonce, body, header)


def parse_command(frame):
    """Splits a command frame (lengths, version and kind only: the tag is the lock's to check)."""
    if not 42 + 9 + 16 <= len(frame) <= 42 + 11 + 16:
        raise Malformed(f"command frame of {len(frame)} octets")
    if frame[0] != 0x01 or frame[1] != 0x01:
        raise Malformed(f"command frame version {frame[0]} kind {frame[1]}")
    key_id, counter = struct.unpack(">IQ", frame[2:14])
    return {"key_id": key_id, "counter": counter, "challenge": frame[14:30], "nonce": frame[30:42],
            "sealed": frame[42:]}


def open_command(secret, frame):
    """What the lock does with a frame whose key it holds: the body, or InvalidTag."""
    f = parse_command(frame)
    return ChaCha20Poly1305(secret).decrypt(f["nonce"], f["sealed"], frame[:42])


# ---------------------------------------------------------------- sessions and sealed replies

REPLY_STATUS = 0x20
REPLY_LOG = 0x21


def session_key(secret, key_id, counter, challenge, nonce):
    info = b"latchkey session v1" + struct.pack(">IQ", key_id, counter)
    return hkdf_sha256(secret, challenge + nonce, info)


def reply_header(kind, sequence):
    return bytes([0x01, kind]) + struct.pack(">I", sequence)


def reply_nonce(sequence):
    return bytes(8) + struct.pack(">I", sequence)


def seal_reply(key, kind, sequence, payload):
    """The lock's side, for the vectors."""
    header = reply_header(kind, sequence)
    return header + ChaCha20Poly1305(key).encrypt(reply_nonce(sequence), payload, header)


class Session:
    """The phone's side of a link's session: opens each sequence once, in order."""

    def __init__(self, key):
        self.key = key
        self.last = 0

    def open(self, reply, kind):
        if not 6 + 16 <= len(reply) <= 6 + 65536 + 16:
            raise Malformed(f"sealed reply of {len(reply)} octets")
        if reply[0] != 0x01 or reply[1] not in (REPLY_STATUS, REPLY_LOG):
            raise Malformed(f"sealed reply version {reply[0]} kind {reply[1]}")
        if reply[1] != kind:
            raise Malformed(f"sealed reply of kind 0x{reply[1]:02X}, not 0x{kind:02X}")
        sequence = struct.unpack(">I", reply[2:6])[0]
        if sequence == 0:
            raise Malformed("sealed reply sequence 0")
        if sequence <= self.last:
            raise Malformed(f"sealed reply sequence {sequence} replayed (last {self.last})")
        payload = ChaCha20Poly1305(self.key).decrypt(reply_nonce(sequence), reply[6:], reply[:6])
        self.last = sequence
        return payload


LOCK_STATES = {0: "not fully locked", 1: "locked", 2: "unlocked", 0x80: "locking", 0x81: "unlocking", 0xFF: "unknown"}


def parse_status(payload):
    if len(payload) != 9 or payload[0] != 0x01 or payload[4] > 1:
        raise Malformed("lock status")
    return {"lock_state": payload[1], "door_state": payload[2], "operating_mode": payload[3],
            "actuator_enabled": payload[4] == 1, "last_event_sequence": struct.unpack(">I", payload[5:9])[0]}


def log_request(from_sequence, maximum_count):
    return struct.pack(">IH", from_sequence, maximum_count)


def split_log(payload):
    records, i = [], 0
    while i < len(payload):
        if i + 5 > len(payload):
            raise Malformed("log record header")
        sequence, n = struct.unpack(">IB", payload[i:i + 5])
        if i + 5 + n > len(payload):
            raise Malformed("log record length")
        records.append((sequence, payload[i + 5:i + 5 + n]))
        i += 5 + n
    return records


EVENT_KINDS = {0: "lock operation", 1: "lock operation error", 2: "door lock alarm", 3: "door state change",
               4: "lock user change", 5: "operating mode change", 6: "suspected relay"}


def parse_event(octets):
    """An audit-log event (29 octets, little-endian): the fields PROTOCOL.md names."""
    if len(octets) != 29:
        raise Malformed(f"event of {len(octets)} octets")
    if octets[0] != 1:
        raise Malformed(f"event version {octets[0]}")
    if octets[1] not in EVENT_KINDS:
        raise Malformed(f"event kind {octets[1]}")
    who, decision, time_ns = struct.unpack("<IQq", octets[9:29])
    flags = octets[8]
    return {"kind": octets[1], "lock_state_before": octets[2], "lock_state_after": octets[3],
            "door_state": octets[4], "operation": octets[5], "source": octets[6], "code": octets[7],
            "flags": flags, "key_id": who if flags & 1 else None, "decision": decision, "time_ns": time_ns}


def chunks(value, mtu):
    """What the lock notifies for one long value: MTU-3 octets each, a one-octet header first."""
    size = mtu - 4
    out, offset, seq = [], 0, 0
    while True:
        end = min(len(value), offset + size)
        last = end == len(value)
        out.append(bytes([(0x80 if last else 0) | seq]) + value[offset:end])
        if last:
            return out
        offset, seq = end, (seq + 1) & 0x7F


class Reassembler:
    def __init__(self, limit=6 + 65536 + 16):
        self.buffer, self.expected, self.limit = b"", 0, limit

    def feed(self, chunk):
        """The whole value after its final chunk, else None; a gap or repeat raises."""
        if not chunk:
            raise Malformed("empty chunk")
        if chunk[0] & 0x7F != self.expected:
            got, self.buffer, self.expected = chunk[0] & 0x7F, b"", 0
            raise Malformed(f"chunk {got} out of sequence")
        self.buffer += chunk[1:]
        if len(self.buffer) > self.limit:
            raise Malformed("transfer too large")
        self.expected = (self.expected + 1) & 0x7F
        if not chunk[0] & 0x80:
            return None
        value, self.buffer, self.expected = self.buffer, b"", 0
        return value


# ---------------------------------------------------------------- pairing

def x25519_public(private):
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    return X25519PrivateKey.from_private_bytes(private).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def x25519(private, public):
    return X25519PrivateKey.from_private_bytes(private).exchange(X25519PublicKey.from_public_bytes(public))


def name_problem(name):
    """Why the lock refuses a proposed name (a subset of the rule: length and ASCII controls)."""
    raw = name.encode("utf-8")
    if len(raw) > 32:
        return "longer than 32 octets"
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in name):
        return "contains a control character"
    return None


def pairing_request(phone_public, nonce, name):
    raw = name.encode("utf-8")
    assert len(phone_public) == 32 and len(nonce) == 16 and len(raw) <= 32
    return bytes([0x02, 0x10]) + phone_public + nonce + bytes([len(raw)]) + raw


def parse_pairing_request(octets):
    if not 51 <= len(octets) <= 51 + 32:
        raise Malformed(f"pairing request of {len(octets)} octets")
    if octets[0] != 0x02 or octets[1] != 0x10:
        raise Malformed(f"pairing request version {octets[0]} kind {octets[1]}")
    n = octets[50]
    if len(octets) != 51 + n:
        raise Malformed(f"pairing request name length {n}")
    try:
        name = octets[51:].decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed("pairing request name is not UTF-8") from e
    if name_problem(name):
        raise Malformed(f"pairing request name {name_problem(name)}")
    return {"phone_public": octets[2:34], "phone_nonce": octets[34:50], "name": name}


def pairing_response(lock_identity, lock_public, lock_nonce, key_id, role, flags, confirmation):
    return (bytes([0x02, 0x11]) + lock_identity + lock_public + lock_nonce + struct.pack(">I", key_id)
            + bytes([role, flags]) + confirmation)


def parse_pairing_response(octets):
    if len(octets) != 104:
        raise Malformed(f"pairing response of {len(octets)} octets")
    if octets[0] != 0x02 or octets[1] != 0x11:
        raise Malformed("pairing response header")
    if octets[86] > 1:
        raise Malformed(f"pairing response role {octets[86]}")
    if octets[87] & ~1:
        raise Malformed(f"pairing response flags {octets[87]}")
    return {"lock_identity": octets[2:34], "lock_public": octets[34:66], "lock_nonce": octets[66:82],
            "key_id": struct.unpack(">I", octets[82:86])[0], "role": octets[86], "flags": octets[87],
            "confirmation": octets[88:104]}


def pairing_transcript(lock_identity, phone_public, phone_nonce, lock_public, lock_nonce, key_id, role, flags, name):
    raw = name.encode("utf-8")
    return (b"latchkey pairing v2" + lock_identity + phone_public + phone_nonce + lock_public + lock_nonce
            + struct.pack(">I", key_id) + bytes([role, flags, len(raw)]) + raw)


def pairing_derive(ephemeral_shared, identity_shared, transcript):
    """Both sides: the phone's key, the lock's confirmation and the six-digit code."""
    if ephemeral_shared == bytes(32) or identity_shared == bytes(32):
        raise Malformed("a non-contributory X25519 result (a low-order public key)")
    th = hashlib.sha256(transcript).digest()
    ikm = ephemeral_shared + identity_shared
    key = hkdf_sha256(ikm, th, b"latchkey command key v1")
    confirm = hkdf_sha256(ikm, th, b"latchkey pairing confirm v1")
    mac = hmac.new(confirm, b"lock" + th, hashlib.sha256).digest()[:16]
    code_mac = hmac.new(confirm, b"code" + th, hashlib.sha256).digest()
    code = f"{struct.unpack('>I', code_mac[:4])[0] % 1_000_000:06d}"
    return {"th": th, "ikm": ikm, "key": key, "confirm_key": confirm, "lock_confirmation": mac, "code": code}


def fingerprint_octets(identity_public):
    return hashlib.sha256(identity_public).digest()[:16]


def fingerprint_text(octets):
    h = octets.hex()
    return "-".join(h[i:i + 4] for i in range(0, 32, 4))


def parse_beacon(manufacturer_data):
    """The pairing beacon: the fingerprint of a lock whose window is open, else None."""
    d = manufacturer_data
    if len(d) != 21 or d[:4] != b"\xff\xffLK" or d[4] != 0x01:
        return None
    return d[5:]


class PhonePairing:
    """The phone's side of one pairing attempt, pinned to a lock fingerprint."""

    def __init__(self, ephemeral_private, nonce, name, expected_fingerprint):
        self.private, self.nonce, self.name = ephemeral_private, nonce, name
        self.expected = expected_fingerprint.replace("-", "").lower()
        self.public = x25519_public(ephemeral_private)

    def request(self):
        return pairing_request(self.public, self.nonce, self.name)

    def complete(self, response_octets):
        r = parse_pairing_response(response_octets)
        if fingerprint_octets(r["lock_identity"]).hex() != self.expected:
            raise Malformed("the lock's identity is not the pinned fingerprint")
        transcript = pairing_transcript(r["lock_identity"], self.public, self.nonce, r["lock_public"], r["lock_nonce"],
                                        r["key_id"], r["role"], r["flags"], self.name)
        d = pairing_derive(x25519(self.private, r["lock_public"]), x25519(self.private, r["lock_identity"]),
                           transcript)
        if not hmac.compare_digest(d["lock_confirmation"], r["confirmation"]):
            raise Malformed("the lock's confirmation did not verify")
        return {**r, **d}


# ---------------------------------------------------------------- the simulated air (docs/PROTOCOL.md, "The simulated air")

AIR_VERSION = 3


class _Reader:
    def __init__(self, b):
        self.b, self.i = b, 0

    def take(self, n):
        if self.i + n > len(self.b):
            raise Malformed("air message truncated")
        out = self.b[self.i:self.i + n]
        self.i += n
        return out

    def u8(self): return self.take(1)[0]
    def u16(self): return struct.unpack("<H", self.take(2))[0]
    def u32(self): return struct.unpack("<I", self.take(4))[0]
    def u64(self): return struct.unpack("<Q", self.take(8))[0]
    def data(self): return self.take(self.u16())
    def optional(self, read): return read() if self.u8() else None
    def listof(self, read): return [read() for _ in range(self.u16())]
    def address(self): return (self.u64(), self.u8())

    def advertising_data(self):
        return {"flags": self.optional(self.u8), "services": self.listof(self.data),
                "name": self.optional(lambda: self.data().decode("utf-8")), "manufacturer": self.optional(self.data)}

    def link(self):
        return {"id": self.u64(), "peer": self.address(), "role": self.u8(), "mtu": self.u16(), "window": self.u16(),
                "interval_us": self.u32()}

    def status(self):
        return {"radio": self.u8(), "advertising": self.u8(), "scanning": self.u8(), "pending": self.listof(self.address)}


def parse_address(text):
    return int(text.replace(":", ""), 16)


def uuid_le(text):
    return bytes(reversed(bytes.fromhex(text.replace("-", ""))))


class Air:
    """An application attached to one simulated controller (the air's agent protocol)."""

    def __init__(self, path, address, position):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.connect(path)
        self.links, self.reports, self.events = {}, [], []
        hello = bytes([0x01, AIR_VERSION]) + struct.pack("<QB", parse_address(address), 0)
        hello += b"\x01" + struct.pack("<d", position)
        self.sock.sendall(hello)
        kind, r = self._receive(time.monotonic() + 5)
        if kind != 0x80:
            raise Malformed(f"no welcome from the air (message 0x{kind:02X})")
        r.u8()
        r.status()
        for link in r.listof(r.link):
            self.links[link["id"]] = dict(link, credits=link["window"], inbox=[], up=True)

    def close(self):
        self.sock.close()

    def _receive(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("nothing from the air in time")
        self.sock.settimeout(left)
        try:
            message = self.sock.recv(70000)
        except socket.timeout as e:
            raise TimeoutError("nothing from the air in time") from e
        if not message:
            raise ConnectionError("the air closed the connection")
        r = _Reader(message)
        return r.u8(), r

    def pump(self, deadline):
        """Handles one message from the air."""
        kind, r = self._receive(deadline)
        if kind == 0x82:  # advertisement report
            address = r.address()
            self.reports.append({"address": address, "data": r.advertising_data(), "rssi": r.u8(), "connectable": r.u8()})
        elif kind == 0x83:  # link up
            link = r.link()
            self.links[link["id"]] = dict(link, credits=link["window"], inbox=[], up=True)
        elif kind == 0x84:  # PDU received
            link_id = r.u64()
            self.links[link_id]["inbox"].append(r.data())
        elif kind == 0x85:  # credits back
            link_id = r.u64()
            self.links[link_id]["credits"] += r.u16()
        elif kind == 0x86:  # link down
            link_id = r.u64()
            self.links[link_id]["up"] = False
            self.links[link_id]["reason"] = r.u8()
        elif kind == 0x88:
            raise ConnectionError(f"the air rejected us: {r.data().decode()}")
        else:  # status, command failed, interval updates: nothing this client acts on
            self.events.append(kind)

    def wait(self, condition, seconds, what):
        deadline = time.monotonic() + seconds
        while not condition():
            try:
                self.pump(deadline)
            except TimeoutError as e:
                raise TimeoutError(f"{what}: not within {seconds} s") from e

    def start_scanning(self):
        ms = 1_000_000  # ns per ms
        self.sock.sendall(bytes([0x12, 1]) + struct.pack("<qq", 60 * ms, 60 * ms) + b"\x00")

    def stop_scanning(self):
        self.sock.sendall(bytes([0x13]))

    def connect(self, address, seconds=10):
        """Adds the peer to the pending list and waits for its link."""
        known = set(self.links)
        self.sock.sendall(bytes([0x14]) + struct.pack("<QB", parse_address(address), 0))
        self.wait(lambda: any(i not in known for i in self.links), seconds, f"a link to {address}")
        link_id = next(i for i in self.links if i not in known)
        self.sock.sendall(bytes([0x15]) + struct.pack("<QB", parse_address(address), 0))
        return link_id

    def disconnect(self, link_id):
        self.sock.sendall(bytes([0x21]) + struct.pack("<Q", link_id))

    def send(self, link_id, pdu, deadline):
        link = self.links[link_id]
        while link["credits"] == 0:
            self.pump(deadline)
        link["credits"] -= 1
        self.sock.sendall(bytes([0x20]) + struct.pack("<QH", link_id, len(pdu)) + pdu)


# ---------------------------------------------------------------- ATT client

class Gatt:
    """A minimal ATT client over one link: one request at a time, notifications kept."""

    def __init__(self, air, link_id):
        self.air, self.link = air, link_id
        self.mtu = 23
        self.notifications = []  # (handle, value)
        self.handles = {}  # characteristic UUID -> (value handle, CCCD handle or None)

    def _next_pdu(self, deadline):
        inbox = self.air.links[self.link]["inbox"]
        while not inbox:
            if not self.air.links[self.link]["up"]:
                raise ConnectionError("the link went down")
            self.air.pump(deadline)
        return inbox.pop(0)

    def _unsolicited(self, pdu, deadline):
        """Keeps a notification, confirms an indication; False for anything else."""
        if pdu[0] == 0x1B:
            self.notifications.append((struct.unpack("<H", pdu[1:3])[0], pdu[3:]))
        elif pdu[0] == 0x1D:
            self.air.send(self.link, b"\x1e", deadline)
        else:
            return False
        return True

    def request(self, pdu, seconds=5):
        deadline = time.monotonic() + seconds
        self.air.send(self.link, pdu, deadline)
        while True:
            answer = self._next_pdu(deadline)
            if self._unsolicited(answer, deadline):
                continue
            if answer[0] == 0x01 and answer[1] == pdu[0]:
                raise Refused(answer[4], f"opcode 0x{pdu[0]:02X} on handle {struct.unpack('<H', answer[2:4])[0]}")
            else:
                return answer

    def wait_notification(self, handle, seconds=5):
        deadline = time.monotonic() + seconds
        while True:
            for i, (h, value) in enumerate(self.notifications):
                if h == handle:
                    del self.notifications[i]
                    return value
            self._unsolicited(self._next_pdu(deadline), deadline)

    def _entries(self, opcode, start, end, attribute_type):
        """The list of a Read By (Group) Type response; empty once nothing is left (0x0A)."""
        try:
            answer = self.request(bytes([opcode]) + struct.pack("<HHH", start, end, attribute_type))
        except Refused as e:
            if e.code == 0x0A:
                return []
            raise
        size = answer[1]
        return [answer[i:i + size] for i in range(2, len(answer), size)]

    def exchange_mtu(self, mtu=247):
        answer = self.request(b"\x02" + struct.pack("<H", mtu))
        self.mtu = max(23, min(mtu, struct.unpack("<H", answer[1:3])[0]))

    def discover(self):
        """Finds the lock service, its characteristics and their CCCDs by the standard procedures."""
        start, service = 1, None
        while start <= 0xFFFF and service is None:
            entries = self._entries(0x10, start, 0xFFFF, 0x2800)  # Read By Group Type: primary services
            if not entries:
                break
            for entry in entries:
                first, last = struct.unpack("<HH", entry[:4])
                if entry[4:] == uuid_le(SERVICE):
                    service = (first, last)
                start = last + 1
        if service is None:
            raise Malformed("no lock service")
        chars, start = [], service[0]
        while start <= service[1]:
            entries = self._entries(0x08, start, service[1], 0x2803)  # Read By Type: characteristic declarations
            if not entries:
                break
            for entry in entries:
                decl, props, value = struct.unpack("<HBH", entry[:5])
                chars.append((decl, props, value, entry[5:]))
                start = decl + 1
        for n, (decl, props, value, uuid) in enumerate(chars):
            end = chars[n + 1][0] - 1 if n + 1 < len(chars) else service[1]
            cccd = None
            if end > value:
                answer = self.request(b"\x04" + struct.pack("<HH", value + 1, end))
                step = 4 if answer[1] == 1 else 18
                for i in range(2, len(answer), step):
                    h = struct.unpack("<H", answer[i:i + 2])[0]
                    if answer[i + 2:i + step] == b"\x02\x29":
                        cccd = h
            text = bytes(reversed(uuid)).hex()
            key = f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
            self.handles[key] = (value, cccd, props)
        return self.handles

    def read(self, uuid, long=False):
        handle = self.handles[uuid][0]
        value = self.request(b"\x0a" + struct.pack("<H", handle))[1:]
        while long and len(value) % (self.mtu - 1) == 0 and value:
            part = self.request(b"\x0c" + struct.pack("<HH", handle, len(value)))[1:]
            if not part:
                break
            value += part
            if len(part) < self.mtu - 1:
                break
        return value

    def write(self, uuid, value):
        answer = self.request(b"\x12" + struct.pack("<H", self.handles[uuid][0]) + value)
        if answer[0] != 0x13:
            raise Malformed(f"write answered with opcode 0x{answer[0]:02X}")

    def subscribe(self, uuid):
        cccd = self.handles[uuid][1]
        answer = self.request(b"\x12" + struct.pack("<H", cccd) + b"\x01\x00")
        if answer[0] != 0x13:
            raise Malformed(f"subscription answered with opcode 0x{answer[0]:02X}")
