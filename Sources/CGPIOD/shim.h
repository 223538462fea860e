// libgpiod 1.6 (Debian 12 / Raspberry Pi OS bookworm: the v1 API). Its request flags are
// enum constants built with GPIOD_BIT(), which Swift imports as values; the function-like
// macro itself and gpiod_foreach_chip() are not used. Only LatchkeyKernel/Internal/
// Syscalls.swift uses this module. libgpiod 2 (Debian 13) would be a second module behind
// the same Swift protocol: see docs/ARCHITECTURE.md.
#ifndef LATCHKEY_CGPIOD_SHIM_H
#define LATCHKEY_CGPIOD_SHIM_H

#include <gpiod.h>

#endif
