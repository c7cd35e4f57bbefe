import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry

/// The params of `pool.set`, `pool.acquire` and `pool.release`, and the
/// `pool` param they and `then` share.
extension PoolSetCommand {
    /// `pool`, `limit` (0…``ExecPools/maxLimit``).
    init(decoding params: RPCParams) throws(RPCError) {
        let pool = try params.poolName("pool")
        guard let limit = try params.int("limit", in: 0...ExecPools.maxLimit) else {
            throw RPCParams.invalid("limit", "missing \"limit\" (slots, 0 to \(ExecPools.maxLimit))")
        }
        self.init(pool: pool, limit: limit)
    }
}

extension PoolAcquireCommand {
    /// `pool`, `id?`.
    init(decoding params: RPCParams) throws(RPCError) {
        self.init(pool: try params.poolName("pool"), promiseID: try params.optionalPromiseID("id"))
    }
}

extension PoolReleaseCommand {
    /// `pool`.
    init(decoding params: RPCParams) throws(RPCError) {
        self.init(pool: try params.poolName("pool"))
    }
}

extension RPCParams {
    /// The required pool name under `key`.
    func poolName(_ key: String) throws(RPCError) -> String {
        guard let name = try optionalPoolName(key) else { throw Self.invalid(key, "missing \"\(key)\"") }
        return name
    }

    /// The pool name under `key`, nil when absent: 1 to
    /// ``ExecPools/maxNameBytes`` letters, digits, ".", "_" or "-".
    func optionalPoolName(_ key: String) throws(RPCError) -> String? {
        guard let name = try string(key) else { return nil }
        guard ExecPools.isValidName(name) else {
            throw Self.invalid(
                key, "\"\(key)\" must be 1 to \(ExecPools.maxNameBytes) letters, digits, \".\", \"_\" or \"-\"")
        }
        return name
    }
}
