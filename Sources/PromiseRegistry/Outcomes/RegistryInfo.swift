import PromiseModel

/// What `info` reports of the registry: its counts, pools, limits and store.
package struct RegistryInfo {
    /// Promises held.
    package var promises: Int
    package var pending: Int
    package var settled: Int
    /// Settled promises dropped by retention.
    package var collected: Int
    /// Open connections.
    package var connections: Int
    package var runningProcesses: Int
    /// Each pool's use, by name.
    package var pools: [String: PoolUse]
    package var limits: DaemonLimits
    /// The store; nil: promises are kept in memory only.
    package var store: StoreInfo?
    /// How long settled promises are kept (`--retain`); nil: until forgotten.
    package var retainMilliseconds: Int64?
}

/// A pool's limit and use, with its first holders and waiting turns
/// (at most ``ExecPools/listedPerPool`` of each).
package struct PoolUse {
    package var limit: Int
    package var running: Int
    package var queued: Int
    package var holders: [PoolSlot.Holder]
    package var waiting: [PoolSlot.Holder]
}

/// Where promises are stored and whether that works.
package struct StoreInfo {
    package var location: String
    /// Why the store cannot write; nil while it can.
    package var failure: String?
    package var commits: Int
    package var changes: Int
    package var unstorable: Int
    package var quarantined: Int
}
