#!/usr/bin/env python3
"""Writes Tests/protocol/vectors.json from fixed inputs, with the client written from
docs/PROTOCOL.md. The Swift test (ProtocolVectorTests) checks the lock's own code against
the same file in both directions, so a vector this script gets wrong fails there.

    python3 Tests/protocol/make_vectors.py          rewrite the file
    python3 Tests/protocol/make_vectors.py --check  exit 1 when the file differs
"""

import hashlib
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import latchkey_client as lk  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# Unlocked, door closed, mode Normal, actuator enabled, newest event 2.
STATUS_PAYLOAD = bytes([1, 2, 1, 0, 1]) + struct.pack(">I", 2)


def h(b):
    return b.hex()


def fixed(label, n=32):
    """Fixed octets nobody has to trust: SHA-256 of a label, cut to n."""
    return hashlib.sha256(label.encode()).digest()[:n]


def command_vectors():
    secret = bytes(range(32))
    key_id = 7
    challenge = bytes(range(0xC0, 0xD0))
    frames = []
    cases = [("lock", {}), ("unlock", {}), ("unlock-with-timeout", {"timeout_s": 30}), ("arrival-unlock", {}),
             ("present", {}), ("set-operating-mode", {"operating_mode": 3})]
    for i, (op, args) in enumerate(cases):
        counter = 42 + i
        command_id = 0x010203040500 + i
        nonce = bytes(range(0xA0, 0xAB)) + bytes([i])
        body = lk.command_body(op, command_id, **args)
        frame = lk.seal_command(secret, key_id, counter, challenge, nonce, body)
        session = lk.session_key(secret, key_id, counter, challenge, nonce)
        frames.append({"operation": op, "operation_code": lk.OPERATIONS[op], "command_id": command_id,
                       "timeout_s": args.get("timeout_s"), "operating_mode": args.get("operating_mode"),
                       "counter": counter, "nonce": h(nonce), "body": h(body),
                       "associated_data": h(frame[:42]), "frame": h(frame),
                       "session_key": h(session),
                       "first_status_reply": h(lk.seal_reply(session, lk.REPLY_STATUS, 1, STATUS_PAYLOAD))})
    grant = challenge + struct.pack(">H", 5000)
    return {"key_secret": h(secret), "key_id": key_id, "challenge": h(challenge),
            "challenge_grant": {"lifetime_ms": 5000, "octets": h(grant)}, "frames": frames}


def events():
    # A remote unlock by key 7 (decision 3), and a revoked key 9's refused frame.
    unlock = bytes([1, 0, 1, 2, 1, 1, 7, 0xFF, 0b011]) + struct.pack("<IQq", 7, 3, 1_500_000_000)
    refused = bytes([1, 1, 1, 1, 1, 0xFF, 7, 2, 0b001]) + struct.pack("<IQq", 9, 0, 2_000_000_000)
    return [
        {"sequence": 1, "octets": h(unlock), "kind": 0, "lock_state_before": 1, "lock_state_after": 2, "door_state": 1,
         "operation": 1, "source": 7, "code": 0xFF, "key_id": 7, "decision": 3, "time_ns": 1_500_000_000},
        {"sequence": 2, "octets": h(refused), "kind": 1, "lock_state_before": 1, "lock_state_after": 1, "door_state": 1,
         "operation": 0xFF, "source": 7, "code": 2, "key_id": 9, "decision": None, "time_ns": 2_000_000_000},
    ]


def session_vectors(commands):
    present = next(f for f in commands["frames"] if f["operation"] == "present")
    key = bytes.fromhex(present["session_key"])
    status = {"lock_state": 2, "door_state": 1, "operating_mode": 0, "actuator_enabled": True, "last_event_sequence": 2}
    status_payload = STATUS_PAYLOAD
    status_reply = lk.seal_reply(key, lk.REPLY_STATUS, 1, status_payload)
    evs = events()
    log_payload = b"".join(struct.pack(">IB", e["sequence"], 29) + bytes.fromhex(e["octets"]) for e in evs)
    log_reply = lk.seal_reply(key, lk.REPLY_LOG, 2, log_payload)
    return {
        "opened_by": "present", "session_key": h(key),
        "status": dict(status, payload=h(status_payload), sequence=1, reply=h(status_reply)),
        "log_request": {"from_sequence": 1, "maximum_count": 100, "octets": h(lk.log_request(1, 100))},
        "log": {"sequence": 2, "events": evs, "payload": h(log_payload), "reply": h(log_reply), "mtu": 23,
                "notifications": [h(c) for c in lk.chunks(log_reply, 23)]},
    }


def pairing_vectors():
    # RFC 7748 section 6.1's two private keys for the phone's ephemeral and the lock's identity.
    phone_private = bytes.fromhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    identity_private = bytes.fromhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
    lock_private = fixed("latchkey vector: the lock's ephemeral")
    phone_nonce, lock_nonce = bytes(range(0x30, 0x40)), bytes(range(0x40, 0x50))
    name, key_id, role, flags = "Alice\u2019s phone", 5, 1, 1
    phone_public, identity, lock_public = (lk.x25519_public(k) for k in (phone_private, identity_private, lock_private))
    transcript = lk.pairing_transcript(identity, phone_public, phone_nonce, lock_public, lock_nonce, key_id, role, flags,
                                       name)
    ephemeral_shared = lk.x25519(lock_private, phone_public)
    identity_shared = lk.x25519(identity_private, phone_public)
    d = lk.pairing_derive(ephemeral_shared, identity_shared, transcript)
    request = lk.pairing_request(phone_public, phone_nonce, name)
    response = lk.pairing_response(identity, lock_public, lock_nonce, key_id, role, flags, d["lock_confirmation"])
    fp = lk.fingerprint_octets(identity)
    return {
        "phone_ephemeral_private": h(phone_private), "phone_ephemeral_public": h(phone_public),
        "phone_nonce": h(phone_nonce), "name": name,
        "lock_identity_private": h(identity_private), "lock_identity_public": h(identity),
        "lock_ephemeral_private": h(lock_private), "lock_ephemeral_public": h(lock_public), "lock_nonce": h(lock_nonce),
        "key_id": key_id, "role": role, "flags": flags,
        "request": h(request), "response": h(response), "transcript": h(transcript), "th": h(d["th"]),
        "ephemeral_shared": h(ephemeral_shared), "identity_shared": h(identity_shared), "ikm": h(d["ikm"]),
        "key": h(d["key"]), "confirm_key": h(d["confirm_key"]), "lock_confirmation": h(d["lock_confirmation"]),
        "code": d["code"], "fingerprint": h(fp), "fingerprint_text": lk.fingerprint_text(fp),
        "beacon": h(b"\xff\xffLK\x01" + fp),
    }


def command_errors(commands):
    """Frames the lock refuses, with the answer (ATT application error) and the lock's keys."""
    s7, s9 = bytes.fromhex(commands["key_secret"]), fixed("latchkey vector: key 9")
    issued = bytes.fromhex(commands["challenge"])
    other = fixed("latchkey vector: another challenge", 16)
    nonce = bytes(range(0xB0, 0xBC))

    def frame(secret, key_id, counter, body, challenge=issued):
        return lk.seal_command(secret, key_id, counter, challenge, nonce, body)

    unlock = lk.command_body("unlock", 77)
    good = frame(s7, 7, 42, unlock)
    out = []

    def add(name, octets, answer, why, issued_challenge=issued):
        out.append({"name": name, "frame": h(octets), "issued_challenge": h(issued_challenge) if issued_challenge else None,
                    "answer": answer, "why": why})

    add("accepted", good, None, "a fresh challenge, the key's tag, a higher counter")
    add("truncated", good[:-1], 0x80, "one octet short: the tag no longer fits")
    add("too-long", good + bytes(3), 0x80, "longer than the longest body allows (69 octets)")
    add("one-octet-more", good + bytes(1), 0x82, "within the lengths: the tag decides")
    add("version-2", b"\x02" + good[1:], 0x80, "an unknown version is malformed, not guessed at")
    add("kind-2", good[:1] + b"\x02" + good[2:], 0x80, "an unknown frame kind")
    add("no-challenge-issued", good, 0x83, "nothing issued on this link", issued_challenge=None)
    add("other-challenge", frame(s7, 7, 42, unlock, other), 0x83, "a challenge this link was not given")
    add("wrong-tag", good[:-1] + bytes([good[-1] ^ 1]), 0x82, "the tag does not verify")
    add("tampered-counter", good[:13] + bytes([good[13] ^ 1]) + good[14:], 0x82, "the header is the tag's AAD")
    add("wrong-key", frame(fixed("latchkey vector: not key 7"), 7, 42, unlock), 0x82, "sealed under another key")
    add("unknown-key-id", frame(s7, 12, 42, unlock), 0x82, "the same answer as a wrong tag")
    add("revoked", frame(s9, 9, 1, unlock), 0x81, "key 9 is revoked: said only after its tag verified")
    add("replayed-counter", frame(s7, 7, 41, unlock), 0x84, "key 7's last counter is 41")
    add("user-sets-mode", frame(s7, 7, 42, lk.command_body("set-operating-mode", 78, operating_mode=3)), 0x85,
        "set-operating-mode is for admin keys")
    add("user-sets-mode-old-counter", frame(s7, 7, 41, lk.command_body("set-operating-mode", 78, operating_mode=3)), 0x85,
        "the role is judged before the counter")
    add("user-arrival", frame(s7, 7, 42, lk.command_body("arrival-unlock", 79)), 0x85,
        "arrival-unlock needs an admin key with the arrival flag")
    add("unknown-operation", frame(s7, 7, 42, bytes([9]) + struct.pack(">Q", 80)), 0x80,
        "a body the key sealed but that means nothing (counted against the key)")
    add("zero-timeout", frame(s7, 7, 42, bytes([3]) + struct.pack(">QH", 81, 0)), 0x80, "unlock-with-timeout of 0 s")
    return {"keys": [{"id": 7, "secret": h(s7), "role": "user", "revoked": False, "last_counter": 41},
                     {"id": 9, "secret": h(s9), "role": "user", "revoked": True, "last_counter": 0}],
            "frames": out}


def reply_errors(sessions):
    key = bytes.fromhex(sessions["session_key"])
    status = bytes.fromhex(sessions["status"]["reply"])
    payload = bytes.fromhex(sessions["status"]["payload"])
    return [
        {"name": "replayed", "after": [h(status)], "reply": h(status), "kind": lk.REPLY_STATUS, "error": "replayed"},
        {"name": "older-sequence", "after": [h(lk.seal_reply(key, lk.REPLY_STATUS, 2, payload))], "reply": h(status),
         "kind": lk.REPLY_STATUS, "error": "replayed"},
        {"name": "sequence-edited", "after": [], "reply": h(status[:5] + b"\x02" + status[6:]), "kind": lk.REPLY_STATUS,
         "error": "authenticationFailed"},
        {"name": "ciphertext-edited", "after": [], "reply": h(status[:6] + bytes([status[6] ^ 0x80]) + status[7:]),
         "kind": lk.REPLY_STATUS, "error": "authenticationFailed"},
        {"name": "wrong-kind", "after": [], "reply": h(status), "kind": lk.REPLY_LOG, "error": "wrongKind"},
        {"name": "sequence-zero", "after": [], "reply": h(status[:2] + bytes(4) + status[6:]), "kind": lk.REPLY_STATUS,
         "error": "malformed"},
        {"name": "version-2", "after": [], "reply": h(b"\x02" + status[1:]), "kind": lk.REPLY_STATUS, "error": "malformed"},
        {"name": "too-short", "after": [], "reply": h(status[:21]), "kind": lk.REPLY_STATUS, "error": "malformed"},
    ]


def pairing_errors(p):
    request = bytes.fromhex(p["request"])
    response = bytes.fromhex(p["response"])
    bad_name = lk.pairing_request(bytes.fromhex(p["phone_ephemeral_public"]), bytes.fromhex(p["phone_nonce"]), "a\x1b[2Jb")
    return {
        "requests": [
            {"name": "version-1", "octets": h(b"\x01" + request[1:]), "answer": 0x80},
            {"name": "kind-0x11", "octets": h(request[:1] + b"\x11" + request[2:]), "answer": 0x80},
            {"name": "name-length-mismatch", "octets": h(request[:-1]), "answer": 0x80},
            {"name": "escape-in-name", "octets": h(bad_name), "answer": 0x80},
            {"name": "all-zero-public-key", "octets": h(request[:2] + bytes(32) + request[34:]), "answer": 0x80},
        ],
        "responses": [
            {"name": "confirmation-edited", "octets": h(response[:-1] + bytes([response[-1] ^ 1])),
             "error": "confirmationFailed"},
            {"name": "role-edited", "octets": h(response[:86] + b"\x00" + response[87:]), "error": "confirmationFailed"},
            {"name": "role-2", "octets": h(response[:86] + b"\x02" + response[87:]), "error": "malformed"},
            {"name": "flags-bit-1", "octets": h(response[:87] + b"\x03" + response[88:]), "error": "malformed"},
            {"name": "truncated", "octets": h(response[:-1]), "error": "malformed"},
            {"name": "another-lock", "octets": h(response[:2] + bytes.fromhex(p["phone_ephemeral_public"]) + response[34:]),
             "error": "unexpectedLock"},
        ],
    }


def build():
    commands = command_vectors()
    sessions = session_vectors(commands)
    pairing = pairing_vectors()
    return {
        "about": "Test vectors of docs/PROTOCOL.md. Hex strings are octets; integers are decimal. "
                 "Written by Tests/protocol/make_vectors.py, checked by Tests/protocol/run (Python) and "
                 "ProtocolVectorTests (Swift).",
        "service": {"service": lk.SERVICE, "lock_state": lk.LOCK_STATE, "lock_control": lk.LOCK_CONTROL,
                    "challenge": lk.CHALLENGE, "data_transfer": lk.DATA_TRANSFER, "pairing": lk.PAIRING},
        "command": commands,
        "session": sessions,
        "pairing": pairing,
        "errors": {"commands": command_errors(commands), "replies": reply_errors(sessions),
                   "pairing": pairing_errors(pairing)},
    }


def main():
    path = os.path.join(HERE, "vectors.json")
    text = json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
    if "--check" in sys.argv:
        with open(path, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{path} differs from what make_vectors.py writes", file=sys.stderr)
                return 1
        return 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
