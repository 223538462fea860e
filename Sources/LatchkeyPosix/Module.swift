// Module LatchkeyPosix: see docs/ARCHITECTURE.md.
