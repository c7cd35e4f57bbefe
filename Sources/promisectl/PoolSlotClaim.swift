import ArgumentParser
import PromiseRPC

/// A slot of one of the daemon's pools, held by `promisectl run --pool` for
/// its command (docs/PROTOCOL.md, "Pools"): asked for with `pool.acquire`
/// before the command starts, given back with `pool.release` once it has
/// ended. The daemon ties the slot to this connection, so a promisectl that
/// dies (kill -9 included) gives it back as its socket closes.
///
/// ```swift
/// let claim = try PoolSlotClaim.acquire(pool: "cc", for: "obj/a.o", on: client)  // waits its turn
/// defer { claim.release() }
/// ```
struct PoolSlotClaim {
    let client: PromiseClient
    let pool: String

    /// How often the wait looks for a settlement of the promise it runs for.
    static let checkInterval: Duration = .milliseconds(200)

    /// Waits for a slot of `pool`, first come first served. Throws the exit
    /// status to end with when `promiseID` (subscribed to) settles meanwhile:
    /// the command is not to run.
    static func acquire(pool: String, for promiseID: String, on client: PromiseClient) throws -> PoolSlotClaim {
        let request = try client.send("pool.acquire", ["pool": .string(pool), "id": .string(promiseID)])
        while true {
            do {
                _ = try client.result(for: request, timeout: checkInterval)
                return PoolSlotClaim(client: client, pool: pool)
            } catch let error as PromiseClientError where error.code == .timedOut {
                try checkStillPending(promiseID, on: client, pool: pool)
            }
        }
    }

    /// Throws when a `settled` notification for `promiseID` has come.
    private static func checkStillPending(_ promiseID: String, on client: PromiseClient, pool: String) throws {
        while let notification = try client.nextNotification(timeout: .zero) {
            guard notification.method == "settled", notification.params["id"]?.stringValue == promiseID,
                  let state = notification.params["state"]?.stringValue
            else { continue }
            Failure.report("\(promiseID) was \(state) while waiting for a slot of pool \(pool); not running the command")
            throw state == "cancelled" ? ExitCode.cancelled : ExitCode.alreadySettledOrExists
        }
    }

    /// Throws -32602 (exit 64) when the daemon has no pool `pool`: checked
    /// before `run` creates its promise, which a failed `pool.acquire` would
    /// leave rejected (its lease ends with the connection).
    static func checkExists(_ pool: String, on client: PromiseClient) throws {
        guard try client.call("info")["pools"]?[pool] == nil else { return }
        throw RPCError(
            .invalidParams, "no pool named \"\(pool)\": start promised with --pool \(pool)=N, or make it with promisectl pool",
            data: ["param": "pool", "pool": .string(pool)])
    }

    /// Gives the slot back; a daemon that is gone has taken it back already.
    func release() {
        _ = try? client.call("pool.release", ["pool": .string(pool)])
    }
}
