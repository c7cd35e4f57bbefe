import PromiseModel

/// What `info` reports of the registry: its counts, pools, limits and store.
struct RegistryInfo {
    /// Promises held.
    var promises: Int
    var pending: Int
    var settled: Int
    /// Settled promises dropped by retention.
    var collected: Int
    /// Open connections.
    var connections: Int
    var runningProcesses: Int
    /// Each pool's use, by name.
    var pools: [String: PoolUse]
    var limits: DaemonLimits
    /// The store; nil: promises are kept in memory only.
    var store: StoreInfo?
    /// How long settled promises are kept (`--retain`); nil: until forgotten.
    var retainMilliseconds: Int64?
}

/// A pool's limit and use, with its first holders and waiting turns
/// (at most ``ExecPools/listedPerPool`` of each).
struct PoolUse {
    var limit: Int
    var running: Int
    var queued: Int
    var holders: [PoolSlot.Holder]
    var waiting: [PoolSlot.Holder]
}

/// Where promises are stored and whether that works.
struct StoreInfo {
    var location: String
    /// Why the store cannot write; nil while it can.
    var failure: String?
    var commits: Int
    var changes: Int
    var unstorable: Int
    var quarantined: Int
}
