// Module LatchkeySimAir: see docs/ARCHITECTURE.md.
