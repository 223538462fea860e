#if canImport(Glibc)
import Glibc
#endif
import LatchkeyHousehold

exit(HouseholdCommand.main(CommandLine.arguments))
