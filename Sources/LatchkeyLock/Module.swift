// Module LatchkeyLock: see docs/ARCHITECTURE.md.
