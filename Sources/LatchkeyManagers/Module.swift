// Module LatchkeyManagers: see docs/ARCHITECTURE.md.
