import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

/// What `promisectl run` does when the daemon goes away while its command
/// runs (docs/DURABILITY.md, "Clients that reconnect"): the command carries
/// on, its outcome is kept in memory, and the session connects again — between
/// polls while the command runs, then blocking once the command has ended —
/// takes its lease again, subscribes again (a cancellation made meanwhile
/// arrives then), asks for its pool slot again while the command runs
/// (`run --pool`), and settles the promise on the new connection.
extension RunSession {
    /// Reads the answer to a `lease` of `id`, taken on each connection: `create … lease`
    /// leases only a promise it makes, and a `run` that dies must never leave a
    /// promise pending forever, whoever created it.
    private func leaseAnswered(_ lease: () throws -> JSONValue) throws {
        do {
            _ = try lease()
        } catch let error as RPCError
            where error.code == .methodNotFound || error.code == .alreadySettled || error.code == .permissionDenied
                || error.code == .noSuchPromise
        {
            // An older daemon; settled meanwhile (settling says so later); another
            // client holds it (a second `run` of the same id): run all the same.
            // Not created yet (a reconnection before `create` was answered): `create` leases it.
        }
    }

    /// On each new connection, before anything else is sent on it: the lease
    /// again, and the subscription that tells of a cancellation.
    func resume(on client: BlockingPromiseClient) throws {
        try finishResume(sendResume(on: client), on: client)
    }

    /// Sends ``resume(on:)``'s two requests without waiting (the daemon answers
    /// them in order, after whatever was sent before them); returns their ids.
    func sendResume(on client: BlockingPromiseClient) throws -> (lease: Int, subscribe: Int) {
        (try client.send("lease", ["id": .string(id)]), try client.send("subscribe", ["ids": [.string(id)]]))
    }

    /// Reads the answers to ``sendResume(on:)``'s requests.
    func finishResume(_ sent: (lease: Int, subscribe: Int), on client: BlockingPromiseClient) throws {
        try leaseAnswered { try client.result(for: sent.lease) }
        try client.result(for: sent.subscribe)
    }

    /// On a new connection made while the command runs with a pool slot: asks
    /// for the slot again. The restarted daemon does not know the slot was
    /// held (it went with the old connection), and would give it to the next
    /// step of the pool while the command still runs.
    func reclaimSlot(on client: BlockingPromiseClient) throws {
        guard commandRunning, let slot else { return }
        try slot.reclaim(on: client)
    }

    /// Between polls: reads the answer to ``reclaimSlot(on:)`` if it has come.
    func checkReclaimedSlot() {
        do {
            try slot?.checkReclaimed(running: command[0])
        } catch {
            lostDaemon(error)
        }
    }

    /// The connection failed while the command runs.
    func lostDaemon(_ error: any Error) {
        daemonGone = true
        connection.markDisconnected(error)
        if connection.policy.reconnects, let limit = connection.policy.giveUpAfter {
            Failure.report("lost the daemon while running \(command[0]); reconnecting (for up to \(limit.components.seconds) s)")
        } else if connection.policy.reconnects {
            Failure.report("lost the daemon while running \(command[0]); reconnecting")
        } else {
            Failure.report("lost the daemon while running \(command[0]): \(error)")
        }
    }

    /// Between polls: one attempt to connect again, if one is due.
    func reconnectIfDue() {
        guard connection.policy.reconnects, !outcomeLost else { return }
        do {
            if try connection.attemptReconnect() { daemonGone = false }
        } catch {
            outcomeLost = true
            Failure.report("\(error); \(command[0]) keeps running, but its outcome cannot settle \(id)")
        }
    }

    /// Before settling: connected again if the daemon went away, waiting as
    /// long as the policy allows. False when the outcome cannot be given.
    func reconnectToSettle() -> Bool {
        guard daemonGone else { return true }
        guard connection.policy.reconnects, !outcomeLost else {
            outcomeLost = true
            Failure.report("could not settle \(id): the daemon is gone")
            return false
        }
        do {
            try connection.reconnect()
            daemonGone = false
            return true
        } catch {
            outcomeLost = true
            Failure.report("could not settle \(id): \(error)")
            return false
        }
    }

    /// Sends `resolve` or `reject`, again on a new connection if the daemon
    /// goes away before answering. Its first sending may have been applied
    /// all the same: an "already settled" answer with this very outcome is success.
    func settleReconnecting(_ method: String, _ params: [String: JSONValue]) throws {
        do {
            try connection.withReconnects { try $0.call(method, params) }
        } catch let error as RPCError where error.code == .alreadySettled && connection.reconnections > 0 {
            let record = error.data
            let applied = method == "resolve"
                ? record?["state"] == "fulfilled" && record?["value"] == (params["value"] ?? .null)
                : record?["state"] == "rejected" && record?["reason"]?["message"] == params["reason"]?["message"]
            if !applied { throw error }
        }
    }
}
