import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

/// A slot of one of the daemon's pools, held by `promisectl run --pool` for
/// its command (docs/PROTOCOL.md, "Pools"): asked for with `pool.acquire`
/// before the command starts, given back with `pool.release` once it has
/// ended. The daemon ties the slot to the connection, so a promisectl that
/// dies (kill -9 included) gives it back as its socket closes.
///
/// A restarted daemon has forgotten the slot with the old connection, so a
/// `run` that reconnects while its command runs asks for it again
/// (``reclaim(on:)``), or the pool's limit would let one more step start.
/// The protocol has no way to say "I held one before the restart": the new
/// `pool.acquire` takes its turn behind any turn already waiting, and the
/// command keeps running meanwhile.
///
/// ```swift
/// let claim = try PoolSlotClaim.acquire(pool: "cc", for: "obj/a.o", on: client)  // waits its turn
/// defer { claim.release(on: client) }
/// ```
final class PoolSlotClaim {
    let pool: String
    let promiseID: String
    private(set) var state: State

    /// Where the slot stands, always on one connection.
    enum State {
        /// Held on this connection.
        case held(BlockingPromiseClient)
        /// `pool.acquire` (request `request`) sent on this new connection, not answered yet.
        case reclaiming(BlockingPromiseClient, request: Int, since: ContinuousClock.Instant)
        /// Not held: given back, or refused by the restarted daemon (the command runs without one).
        case none
    }

    /// How often the first wait looks for a settlement of the promise it runs for.
    static let checkInterval: Duration = .milliseconds(200)
    /// A reclaim not answered after this long is said on stderr: it waits in the queue.
    static let reclaimNoteAfter: Duration = .seconds(1)
    private var notedWaiting = false

    private init(pool: String, promiseID: String, state: State) {
        self.pool = pool
        self.promiseID = promiseID
        self.state = state
    }

    /// Waits for a slot of `pool`, first come first served. Throws the exit
    /// status to end with when `promiseID` (subscribed to) settles meanwhile:
    /// the command is not to run.
    static func acquire(pool: String, for promiseID: String, on client: BlockingPromiseClient) throws -> PoolSlotClaim {
        let request = try client.send("pool.acquire", ["pool": .string(pool), "id": .string(promiseID)])
        while true {
            do {
                _ = try client.result(for: request, timeout: checkInterval)
                return PoolSlotClaim(pool: pool, promiseID: promiseID, state: .held(client))
            } catch let error as PromiseClientError where error.code == .timedOut {
                try checkStillPending(promiseID, on: client, pool: pool)
            }
        }
    }

    /// Throws when a `settled` notification for `promiseID` has come.
    private static func checkStillPending(_ promiseID: String, on client: BlockingPromiseClient, pool: String) throws {
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
    static func checkExists(_ pool: String, on client: BlockingPromiseClient) throws {
        guard try client.call("info")["pools"]?[pool] == nil else { return }
        throw RPCError(
            .invalidParams, "no pool named \"\(pool)\": start promised with --pool \(pool)=N, or make it with promisectl pool",
            data: ["param": "pool", "pool": .string(pool)])
    }

    // MARK: Across a restart of the daemon

    /// Asks for the slot again on `client`, a new connection made while the
    /// command runs; does not wait for the answer (``checkReclaimed()`` reads it
    /// between polls). Throws only when the connection is lost again.
    func reclaim(on client: BlockingPromiseClient) throws {
        let request = try client.send("pool.acquire", ["pool": .string(pool), "id": .string(promiseID)])
        state = .reclaiming(client, request: request, since: .now)
        notedWaiting = false
    }

    /// Reads the answer to ``reclaim(on:)``'s request if it has come, without
    /// blocking. A refusal (the restarted daemon lacks the pool, its queue is
    /// full) is said on stderr and the command runs on without a slot. Throws
    /// only a lost connection.
    func checkReclaimed(running command: String) throws {
        guard case .reclaiming(let client, let request, let since) = state else { return }
        do {
            _ = try client.result(for: request, timeout: .zero)
            state = .held(client)
            if notedWaiting { Failure.report("took a slot of pool \(pool) again for \(promiseID)") }
        } catch let error as PromiseClientError where error.code == .timedOut {
            guard !notedWaiting, ContinuousClock.now - since >= Self.reclaimNoteAfter else { return }
            notedWaiting = true
            Failure.report("the restarted daemon had no free slot of pool \(pool) for \(promiseID): waiting for one "
                           + "while \(command) keeps running (the pool runs one more than its limit meanwhile)")
        } catch let error as RPCError {
            state = .none
            Failure.report("could not take a slot of pool \(pool) again for \(promiseID) after the daemon restarted: "
                           + "\(error.message); \(command) keeps running without one")
        }
    }

    /// Gives the slot back if it is held on `client`, the connection in use
    /// (a slot asked for again whose answer has come is held). One asked for
    /// but not given yet stays asked for: the daemon drops that turn when the
    /// connection closes, as promisectl exits.
    func release(on client: BlockingPromiseClient) {
        if case .reclaiming(let asker, let request, _) = state, asker === client,
           (try? client.result(for: request, timeout: .zero)) != nil
        {
            state = .held(client)
        }
        guard case .held(let holder) = state, holder === client else { return }
        _ = try? client.call("pool.release", ["pool": .string(pool)])
        state = .none
    }
}
