@testable import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// The bookkeeping of a PromiseConnection, fed events by hand: requests and
/// their answers by id, one daemon subscription shared by the watchers of an
/// id, and what the end of the connection fails. No socket, no thread.
@Suite("connection state machine")
struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine<String, String>

    private static func message(_ line: [UInt8]) throws -> JSONValue {
        #expect(line.last == UInt8(ascii: "\n"))
        return try JSONValue(parsing: line.dropLast())
    }

    private static func written(_ action: Machine.SendAction) throws -> JSONValue {
        guard case .write(let line) = action else {
            Issue.record("expected a write, got \(action)")
            return .null
        }
        return try message(line)
    }

    private static func subscribeLine(_ action: Machine.WatchAction) throws -> JSONValue? {
        guard case .write(let line) = action else { return nil }
        return try message(line)
    }

    private static func record(_ id: String, _ state: String, value: JSONValue? = nil) -> JSONValue {
        var members: [String: JSONValue] = ["id": .string(id), "state": .string(state), "parent": nil]
        if let value { members["value"] = value }
        if state == "rejected" { members["reason"] = ["message": "no", "origin": .string(id)] }
        if state == "cancelled" { members["reason"] = ["message": "cancelled"] }
        return .object(members)
    }

    @Test("requests get ids from a counter, and each answer goes to its own caller, in any order")
    func answersMatchedByID() throws {
        var machine = Machine()
        let first = try Self.written(machine.requestSent("get", ["id": "a"], responder: "first"))
        let second = try Self.written(machine.requestSent("create", ["id": "b"], responder: "second"))
        #expect(first == ["jsonrpc": "2.0", "id": 1, "method": "get", "params": ["id": "a"]])
        #expect(second["id"] == 2)
        #expect(machine.requestsInFlight == 2)

        guard case .respond(let who, .success(let result)) = machine.answerReceived(id: 2, result: .success(["ok": true]))
        else { Issue.record("the second answer went nowhere"); return }
        #expect(who == "second")
        #expect(result == ["ok": true])

        let error = RPCError(.noSuchPromise, "no promise with id \"a\"", data: ["id": "a"])
        guard case .respond(let other, .failure(let failure)) = machine.answerReceived(id: 1, result: .failure(error))
        else { Issue.record("the first answer went nowhere"); return }
        #expect(other == "first")
        #expect(failure.code == .noSuchPromise)
        #expect(failure.rpcCode == -32001)
        #expect(failure.message == "no promise with id \"a\"")
        #expect(machine.requestsInFlight == 0)
    }

    @Test("an answer to no request in flight, or answered already, is dropped")
    func strayAnswersDropped() throws {
        var machine = Machine()
        _ = try Self.written(machine.requestSent("get", ["id": "a"], responder: "caller"))
        guard case .respond = machine.answerReceived(id: 1, result: .success(1)) else {
            Issue.record("no answer"); return
        }
        guard case .none = machine.answerReceived(id: 1, result: .success(2)) else {
            Issue.record("a second answer to id 1 was delivered"); return
        }
        guard case .none = machine.answerReceived(id: "x", result: .success(3)) else {
            Issue.record("an answer with a string id was delivered"); return
        }
    }

    @Test("the daemon's error codes become typed errors")
    func typedErrors() {
        let cases: [(RPCError.Code, PromiseConnectionError.Code)] = [
            (.alreadyExists, .exists), (.alreadySettled, .alreadySettled), (.noSuchPromise, .noSuchPromise),
            (.limitExceeded, .refused), (.permissionDenied, .refused), (.invalidParams, .invalidParams),
            (.waitTimedOut, .timedOut), (.internalError, .daemonError), (RPCError.Code(rawValue: -31999), .daemonError),
        ]
        for (rpc, typed) in cases {
            let error = PromiseConnectionError(RPCError(rpc, "m", data: ["id": "a", "state": "fulfilled"]))
            #expect(error.code == typed, "\(rpc.rawValue)")
            #expect(error.rpcCode == rpc.rawValue)
            #expect(error.message == "m")
            #expect(error.record?.state == .fulfilled)
        }
    }

    @Test("watchers of one id share one subscribe; a settlement tells all of them once and ends the interest")
    func oneSubscriptionPerID() throws {
        var machine = Machine()
        let subscribe = try #require(try Self.subscribeLine(machine.watchStarted("m1", id: 1, ids: ["a"])))
        #expect(subscribe == ["jsonrpc": "2.0", "id": 1, "method": "subscribe", "params": ["ids": ["a"]]])
        guard case .none = machine.watchStarted("m2", id: 2, ids: ["a"]) else {
            Issue.record("a second watcher of a subscribed id subscribed again"); return
        }
        #expect(machine.subscribedIDs == 1)
        guard case .none = machine.answerReceived(id: 1, result: .success(["subscribed": 1])) else {
            Issue.record("the subscribe answer went to someone"); return
        }

        guard case .settled(let record, let told, let finished) =
            machine.notificationReceived(method: "settled", params: Self.record("a", "fulfilled", value: 3))
        else { Issue.record("the settlement went nowhere"); return }
        #expect(record.id == "a")
        #expect(record.value == 3)
        #expect(told.sorted() == ["m1", "m2"])
        #expect(finished.sorted() == ["m1", "m2"])
        #expect(machine.subscribedIDs == 0)
        #expect(machine.watcherCount == 0)

        guard case .none = machine.notificationReceived(method: "settled", params: Self.record("a", "fulfilled", value: 3))
        else { Issue.record("a second settled of the same id was delivered"); return }
    }

    @Test("a watcher that comes after the settlement subscribes again, and is told")
    func lateWatcherSubscribesAgain() throws {
        var machine = Machine()
        _ = machine.watchStarted("early", id: 1, ids: ["a"])
        _ = machine.notificationReceived(method: "settled", params: Self.record("a", "cancelled"))
        let again = try #require(try Self.subscribeLine(machine.watchStarted("late", id: 2, ids: ["a"])))
        #expect(again["method"] == "subscribe")
        #expect(again["params"] == ["ids": ["a"]])
        guard case .settled(let record, let told, _) = machine.notificationReceived(
            method: "settled", params: Self.record("a", "cancelled"))
        else { Issue.record("the late watcher was not told"); return }
        #expect(record.state == .cancelled)
        #expect(told == ["late"])
    }

    @Test("a watcher of several ids finishes after the last of them settles, each told once")
    func severalIDs() throws {
        var machine = Machine()
        let subscribe = try #require(try Self.subscribeLine(machine.watchStarted("w", id: 7, ids: ["a", "b", "a"])))
        #expect(subscribe["params"] == ["ids": ["a", "b"]])
        guard case .settled(_, let toldA, let finishedA) = machine.notificationReceived(
            method: "settled", params: Self.record("a", "rejected"))
        else { Issue.record("a went nowhere"); return }
        #expect(toldA == ["w"])
        #expect(finishedA.isEmpty)
        guard case .progress(let id, let fraction, let message, let toldB) = machine.notificationReceived(
            method: "progress", params: ["id": "b", "progress": 0.5, "message": "half"])
        else { Issue.record("progress went nowhere"); return }
        #expect(id == "b" && fraction == 0.5 && message == "half" && toldB == ["w"])
        guard case .settled(_, _, let finishedB) = machine.notificationReceived(
            method: "settled", params: Self.record("b", "fulfilled", value: nil))
        else { Issue.record("b went nowhere"); return }
        #expect(finishedB == ["w"])
        #expect(machine.watcherCount == 0)
    }

    @Test("a watcher of no id is done at once")
    func noIDs() {
        var machine = Machine()
        guard case .finished = machine.watchStarted("w", id: 1, ids: []) else {
            Issue.record("an empty watch did not finish"); return
        }
        #expect(machine.watcherCount == 0)
    }

    @Test("the last watcher of an id to leave unsubscribes it; one that leaves while others stay does not")
    func leavingUnsubscribes() throws {
        var machine = Machine()
        _ = machine.watchStarted("m1", id: 1, ids: ["a"])
        _ = machine.watchStarted("m2", id: 2, ids: ["a", "b"])
        let stayed = machine.watchEnded(1, ids: ["a"])
        #expect(stayed == nil)
        let left = machine.watchEnded(2, ids: ["a", "b"])
        let line = try #require(left)
        let unsubscribe = try Self.message(line)
        #expect(unsubscribe["method"] == "unsubscribe")
        #expect(unsubscribe["params"]?["ids"]?.arrayValue?.compactMap(\.stringValue).sorted() == ["a", "b"])
        #expect(machine.subscribedIDs == 0)
        let twice = machine.watchEnded(2, ids: ["a", "b"])
        #expect(twice == nil)
        guard case .none = machine.notificationReceived(method: "settled", params: Self.record("a", "fulfilled", value: 1))
        else { Issue.record("a watcher that left was told"); return }
    }

    @Test("a refused subscribe ends the watchers it was made for, and only those")
    func refusedSubscribe() throws {
        var machine = Machine()
        _ = machine.watchStarted("first", id: 1, ids: ["a"])          // request 1
        _ = machine.watchStarted("second", id: 2, ids: ["b"])         // request 2
        let refusal = RPCError(.limitExceeded, "too many subscriptions", data: ["limit": "maxSubscriptionsPerConnection"])
        guard case .failWatchers(let ended, let error) = machine.answerReceived(id: 2, result: .failure(refusal)) else {
            Issue.record("the refusal ended no watcher"); return
        }
        #expect(ended == ["second"])
        #expect(error.code == .refused)
        #expect(machine.watcherCount == 1)
        #expect(machine.subscribedIDs == 1)
    }

    @Test("a settled record that cannot be read ends its watchers with invalidResponse")
    func malformedSettled() {
        var machine = Machine()
        _ = machine.watchStarted("w", id: 1, ids: ["a"])
        guard case .failWatchers(let ended, let error) = machine.notificationReceived(
            method: "settled", params: ["id": "a", "state": "exploded"])
        else { Issue.record("a malformed record was delivered"); return }
        #expect(ended == ["w"])
        #expect(error.code == .invalidResponse)
        #expect(machine.watcherCount == 0)
    }

    @Test("a lost connection fails every caller and watcher once; later requests fail at once")
    func connectionLost() {
        var machine = Machine()
        _ = machine.requestSent("get", ["id": "a"], responder: "caller")
        _ = machine.watchStarted("w", id: 1, ids: ["a"])
        let end = machine.connectionLost(PromiseConnectionError(.connectionLost, "gone"), at: .now)
        #expect(end.responders == ["caller"])
        #expect(end.watchers == ["w"])
        #expect(end.error.code == .connectionLost)
        #expect(machine.requestsInFlight == 0 && machine.watcherCount == 0 && machine.subscribedIDs == 0)

        let again = machine.closeRequested()
        #expect(again.responders.isEmpty && again.watchers.isEmpty)
        guard case .fail(let error) = machine.requestSent("get", ["id": "a"], responder: "late") else {
            Issue.record("a request after the end was sent"); return
        }
        #expect(error.code == .connectionLost)
        guard case .fail = machine.watchStarted("late", id: 2, ids: ["a"]) else {
            Issue.record("a watch after the end subscribed"); return
        }
    }

    @Test("the daemon's reason for refusing, sent with a null id before it closed, is what callers get")
    func refusalBeforeClose() {
        var machine = Machine()
        _ = machine.requestSent("get", ["id": "a"], responder: "caller")
        let full = RPCError(.limitExceeded, "too many connections (maxConnections 2)", data: ["limit": "maxConnections"])
        guard case .none = machine.answerReceived(id: .null, result: .failure(full)) else {
            Issue.record("a null-id answer went to a caller"); return
        }
        let end = machine.connectionLost(PromiseConnectionError(.connectionLost, "gone"), at: .now)
        #expect(end.responders == ["caller"])
        #expect(end.error.code == .refused)
        #expect(end.error.message == "too many connections (maxConnections 2)")
    }

    @Test("close fails what waits with closed")
    func closeFailsWithClosed() {
        var machine = Machine()
        _ = machine.requestSent("wait", ["id": "a"], responder: "waiter")
        let end = machine.closeRequested()
        #expect(end.responders == ["waiter"])
        #expect(end.error.code == .closed)
    }

    // MARK: Reconnecting

    private static let policy = ReconnectPolicy(
        initialDelay: .milliseconds(50), maximumDelay: .seconds(1), multiplier: 2, giveUpAfter: .seconds(30))

    private static func lines(_ bytes: [UInt8]) throws -> [JSONValue] {
        try bytes.split(separator: UInt8(ascii: "\n")).map { try JSONValue(parsing: $0) }
    }

    @Test("a lost connection keeps reads and watchers for the next one and fails writes that may have been applied")
    func lostKeepsWhatIsSafe() throws {
        var machine = Machine(policy: Self.policy)
        _ = machine.requestSent("get", ["id": "a"], responder: "reader", retryable: true)       // 1
        _ = machine.requestSent("resolve", ["id": "a", "value": 1], responder: "writer")         // 2
        _ = machine.watchStarted("mirror", id: 1, ids: ["m"])                                    // 3
        let start = ContinuousClock.now
        let end = machine.connectionLost(PromiseConnectionError(.connectionLost, "gone"), at: start)
        #expect(end.responders == ["writer"])
        #expect(end.error.code == .connectionLost)
        #expect(end.watchers.isEmpty)
        #expect(end.reconnectAfter == .milliseconds(50))
        guard case .reconnecting = machine.phase else { Issue.record("not reconnecting: \(machine.phase)"); return }

        // Made while reconnecting: kept, not written.
        guard case .queued = machine.requestSent("create", ["id": "n"], responder: "new") else {
            Issue.record("a request while reconnecting was not queued"); return
        }
        guard case .none = machine.watchStarted("late", id: 2, ids: ["l"]) else {
            Issue.record("a watch while reconnecting subscribed at once"); return
        }

        let sent = try Self.lines(machine.reconnected())
        // The subscribe, a record read per watched id, then the kept requests.
        #expect(sent.map { $0["method"]?.stringValue ?? "" } == ["subscribe", "get", "get", "get", "create"])
        #expect(sent[0]["params"] == ["ids": ["l", "m"]])
        #expect(sent[1]["params"] == ["id": "l"] && sent[2]["params"] == ["id": "m"])
        #expect(sent[3]["id"] == 1 && sent[3]["params"] == ["id": "a"])
        #expect(sent[4]["params"] == ["id": "n"])

        guard case .respond(let reader, .success) = machine.answerReceived(id: 1, result: .success(["id": "a", "state": "pending"]))
        else { Issue.record("the retried get went nowhere"); return }
        #expect(reader == "reader")
        guard case .settled(_, let told, _) = machine.notificationReceived(
            method: "settled", params: Self.record("m", "fulfilled", value: 2))
        else { Issue.record("the mirror was not told after the reconnection"); return }
        #expect(told == ["mirror"])
    }

    @Test("a request queued while reconnecting is sent once; lost again before its answer, it fails")
    func queuedSentOnce() throws {
        var machine = Machine(policy: Self.policy)
        _ = machine.connectionLost(PromiseConnectionError(.connectionLost, "gone"), at: .now)
        _ = machine.requestSent("resolve", ["id": "a", "value": 1], responder: "writer")
        let first = machine.reconnected()
        #expect(try Self.lines(first).map { $0["method"] } == ["resolve"])
        let again = machine.connectionLost(PromiseConnectionError(.connectionLost, "gone"), at: .now)
        #expect(again.responders == ["writer"])
        let second = machine.reconnected()
        #expect(second.isEmpty)
    }

    @Test("leases taken are taken back first on the next connection, until their promise settles")
    func leasesTakenBack() throws {
        var machine = Machine(policy: Self.policy)
        _ = machine.requestSent("create", ["id": "held", "lease": true], responder: "c1", takesLease: true)   // 1
        _ = machine.requestSent("create", ["id": "done", "lease": true], responder: "c2", takesLease: true)   // 2
        _ = machine.answerReceived(id: 1, result: .success(Self.record("held", "pending")))
        _ = machine.answerReceived(id: 2, result: .success(Self.record("done", "pending")))
        _ = machine.requestSent("resolve", ["id": "done"], responder: "r")                                     // 3
        _ = machine.answerReceived(id: 3, result: .success(Self.record("done", "fulfilled", value: nil)))
        #expect(machine.leases == ["held"])

        _ = machine.watchStarted("w", id: 1, ids: ["x"])
        _ = machine.connectionLost(PromiseConnectionError(.connectionLost, "gone"), at: .now)
        let sent = try Self.lines(machine.reconnected())
        #expect(sent.map { $0["method"]?.stringValue ?? "" } == ["lease", "subscribe", "get"])
        #expect(sent[0]["params"] == ["id": "held"])

        // Settled meanwhile: the daemon refuses the lease, and it is let go.
        let settled = RPCError(.alreadySettled, "already settled", data: Self.record("held", "rejected"))
        _ = machine.answerReceived(id: try #require(sent[0]["id"]), result: .failure(settled))
        #expect(machine.leases.isEmpty)
    }

    @Test("after a reconnection, progress a watched id made meanwhile is told once from its record; none is told otherwise")
    func progressRecheckedAfterReconnection() throws {
        var machine = Machine(policy: Self.policy)
        _ = machine.watchStarted("moved", id: 1, ids: ["m"])
        _ = machine.watchStarted("still", id: 2, ids: ["s"])
        _ = machine.watchStarted("gone", id: 3, ids: ["g"])
        _ = machine.watchStarted("done", id: 4, ids: ["d"])
        _ = machine.watchStarted("new", id: 5, ids: ["n"])
        _ = machine.connectionLost(PromiseConnectionError(.connectionLost, "gone"), at: .now)
        let sent = try Self.lines(machine.reconnected())
        let gets = Dictionary(uniqueKeysWithValues: sent.filter { $0["method"] == "get" }.map {
            ($0["params"]?["id"]?.stringValue ?? "", $0["id"]!)
        })
        #expect(gets.keys.sorted() == ["d", "g", "m", "n", "s"])

        let moved: JSONValue = ["id": "m", "state": "pending", "progress": 0.75, "progressMessage": "linking"]
        guard case .progress(let id, let fraction, let message, let told) = machine.answerReceived(
            id: try #require(gets["m"]), result: .success(moved))
        else { Issue.record("the progress made meanwhile was not told"); return }
        #expect(id == "m" && fraction == 0.75 && message == "linking" && told == ["moved"])

        // No progress, settled (its settled notification tells it), no such promise yet, a watcher that left: nothing.
        guard case .none = machine.answerReceived(id: try #require(gets["s"]), result: .success(Self.record("s", "pending")))
        else { Issue.record("a record without progress was told"); return }
        let settled: JSONValue = ["id": "d", "state": "fulfilled", "value": 1, "progress": 1]
        guard case .none = machine.answerReceived(id: try #require(gets["d"]), result: .success(settled))
        else { Issue.record("a settled record was told as progress"); return }
        guard case .none = machine.answerReceived(
            id: try #require(gets["n"]), result: .failure(RPCError(.noSuchPromise, "no such promise")))
        else { Issue.record("a missing promise was told"); return }
        _ = machine.watchEnded(3, ids: ["g"])
        let left: JSONValue = ["id": "g", "state": "pending", "progress": 0.5]
        guard case .none = machine.answerReceived(id: try #require(gets["g"]), result: .success(left))
        else { Issue.record("a watcher that left was told"); return }
        #expect(machine.requestsInFlight == 2)   // the subscribe, and the unsubscribe of "g"
    }

    @Test("reconnection attempts back off as the policy says and give up after giveUpAfter, failing everything")
    func givingUp() {
        var machine = Machine(policy: Self.policy)
        _ = machine.requestSent("wait", ["id": "a"], responder: "waiter", retryable: true)
        _ = machine.watchStarted("w", id: 1, ids: ["a"])
        let start = ContinuousClock.now
        _ = machine.connectionLost(PromiseConnectionError(.connectionLost, "gone"), at: start)
        let refused = PromiseConnectionError(.unreachable, "daemon not running at /s")
        var delays: [Duration] = []
        for second in 1...4 {
            let next = machine.reconnectFailed(at: start + .seconds(second), refused)
            delays.append(next.reconnectAfter ?? .zero)
            #expect(next.responders.isEmpty && next.watchers.isEmpty)
        }
        #expect(delays == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800)])
        let end = machine.reconnectFailed(at: start + .seconds(30), refused)
        #expect(end.reconnectAfter == nil)
        #expect(end.responders == ["waiter"])
        #expect(end.watchers == ["w"])
        #expect(end.error.code == .connectionLost)
        #expect(end.error.message.contains("daemon not running at /s"))
    }

    @Test("a daemon that refused the client is not connected to again")
    func refusalIsNotRetried() {
        var machine = Machine(policy: Self.policy)
        _ = machine.requestSent("get", ["id": "a"], responder: "caller", retryable: true)
        _ = machine.answerReceived(id: .null, result: .failure(RPCError(.limitExceeded, "too many connections")))
        let end = machine.connectionLost(PromiseConnectionError(.connectionLost, "gone"), at: .now)
        #expect(end.reconnectAfter == nil)
        #expect(end.responders == ["caller"])
        #expect(end.error.code == .refused)
    }

    @Test("close while reconnecting fails what waits with closed")
    func closeWhileReconnecting() {
        var machine = Machine(policy: Self.policy)
        _ = machine.requestSent("get", ["id": "a"], responder: "reader", retryable: true)
        _ = machine.connectionLost(PromiseConnectionError(.connectionLost, "gone"), at: .now)
        let end = machine.closeRequested()
        #expect(end.responders == ["reader"])
        #expect(end.error.code == .closed)
        let after = machine.reconnected()
        #expect(after.isEmpty)
    }
}
