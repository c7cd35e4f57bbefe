import ArgumentParser
import PromiseModel
import PromiseRPC
import PromiseServer

/// A pool and its limit at start: `--pool cc=2` (docs/PROTOCOL.md, "Pools").
/// `--pool default=N` sets the default pool, as `--max-running-processes N` does.
struct PoolLimit: ExpressibleByArgument, Sendable, Hashable {
    let name: String
    let limit: Int

    init?(argument: String) {
        let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, DaemonLimits.isValidPoolName(String(parts[0])),
              let limit = Int(parts[1]), (0...DaemonLimits.maxPoolLimit).contains(limit)
        else { return nil }
        name = String(parts[0])
        self.limit = limit
    }

    var defaultValueDescription: String { "\(name)=\(limit)" }
}
