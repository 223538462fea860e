#if canImport(Glibc)
import Glibc
#endif

/// The process's own memory, two ways: what its allocator has handed out and not had back
/// (a leak of any size raises it, and freed memory lowers it at once), and its data size
/// from the kernel (heap and anonymous mappings, which a freed chunk may not leave).
public enum ProcessMemory {
    /// Bytes allocated and not freed (glibc's mallinfo2: uordblks + hblkhd).
    public static var allocatedBytes: Int64 { Syscalls.mallocInUse() }

    /// /proc/self/statm's sixth field (data + stack) in bytes; -1 when it cannot be read.
    public static var dataBytes: Int64 {
        guard let f = fopen("/proc/self/statm", "r") else { return -1 }
        defer { fclose(f) }
        var buffer = [CChar](repeating: 0, count: 256)
        guard fgets(&buffer, 256, f) != nil else { return -1 }
        let fields = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).split(separator: " ")
        guard fields.count >= 6, let pages = Int64(fields[5]) else { return -1 }
        return pages * Int64(sysconf(Int32(_SC_PAGESIZE)))
    }
}
