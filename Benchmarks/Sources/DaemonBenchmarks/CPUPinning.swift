import Glibc

/// Runs a server on one core only, for the pinned comparison: each server
/// alone on one core, the clients on the other. Unpinned, promised's other
/// threads (the store writer, libuv's pool) could use the clients' core,
/// which Redis, single-threaded, cannot; pinned, both servers have exactly
/// one core. The clients' side is pinned from outside, by running this
/// benchmark under `taskset` (scripts/bench.sh): Glibc's module does not
/// export `sched_setaffinity`.
enum CPUPinning {
    /// The command line that starts `executable` on core `cpu` only, through
    /// util-linux's `taskset` (every thread the server makes stays there).
    static func command(_ executable: String, _ arguments: [String], cpu: Int) -> (String, [String]) {
        ("/usr/bin/taskset", ["--cpu-list", "\(cpu)", executable] + arguments)
    }
}
