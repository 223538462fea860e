// The libbluetooth (BlueZ) headers LatchkeyKernel needs: socket address structures
// (sockaddr_hci, sockaddr_l2, bdaddr_t), protocol and option constants, l2cap_options.
// Only LatchkeyKernel/Internal/Syscalls.swift uses this module. Headers only: nothing of the
// library is called, so the binary does not link libbluetooth.
//
// What Swift cannot import from these headers is rebuilt here: BDADDR_ANY is a compound
// literal and htobs() a function-like macro, so the ATT channel id arrives already in
// little-endian order through latchkey_htobs().
#ifndef LATCHKEY_CBLUETOOTH_SHIM_H
#define LATCHKEY_CBLUETOOTH_SHIM_H

#include <stdint.h>
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/l2cap.h>

/// htobs(): host to Bluetooth (little-endian) short.
static inline uint16_t latchkey_htobs(uint16_t value) { return htobs(value); }

/// The fixed L2CAP channel of the Attribute Protocol on LE links (Core Vol 3 Part A 2.1).
static const uint16_t LATCHKEY_L2CAP_CID_ATT = 0x0004;

#endif
