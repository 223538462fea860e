// Module LatchkeyGATT: see docs/ARCHITECTURE.md.
