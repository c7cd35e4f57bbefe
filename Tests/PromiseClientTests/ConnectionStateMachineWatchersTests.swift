@testable import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// Several watchers of one id in the connection state machine: the first
/// lives in the id's table entry, the others beside it; together they are
/// told, fail and leave as one list, in the order they came.
@Suite("connection state machine, watchers of one id")
struct ConnectionStateMachineWatchersTests {
    typealias Machine = ConnectionStateMachine<String, String>

    private static func record(_ id: String) -> JSONValue {
        ["id": .string(id), "state": "fulfilled", "parent": nil, "value": 1]
    }

    private static func method(_ line: [UInt8]?) throws -> String? {
        guard let line else { return nil }
        return try JSONValue(parsing: line.dropLast())["method"]?.stringValue
    }

    @Test("watchers of an id are told in the order they came, also after the first left")
    func orderAfterFirstLeft() {
        var machine = Machine()
        _ = machine.watchStarted("m1", id: 1, ids: ["a"])
        _ = machine.watchStarted("m2", id: 2, ids: ["a"])
        _ = machine.watchStarted("m3", id: 3, ids: ["a"])
        #expect(machine.watchEnded(1, ids: ["a"]) == nil)
        _ = machine.watchStarted("m4", id: 4, ids: ["a"])
        #expect(machine.watcherCount == 3)
        guard case .settled(_, let told, let finished) =
            machine.notificationReceived(method: "settled", params: Self.record("a"))
        else { Issue.record("the settlement went nowhere"); return }
        #expect(told == ["m2", "m3", "m4"])
        #expect(finished == ["m2", "m3", "m4"])
        #expect(machine.watcherCount == 0)
        #expect(machine.subscribedIDs == 0)
    }

    @Test("a middle watcher that leaves is told nothing more; the last to leave unsubscribes")
    func middleWatcherLeaves() throws {
        var machine = Machine()
        _ = machine.watchStarted("m1", id: 1, ids: ["a"])
        _ = machine.watchStarted("m2", id: 2, ids: ["a"])
        _ = machine.watchStarted("m3", id: 3, ids: ["a"])
        #expect(machine.watchEnded(2, ids: ["a"]) == nil)
        guard case .progress(_, _, _, let told) =
            machine.notificationReceived(method: "progress", params: ["id": "a", "progress": 0.5])
        else { Issue.record("the progress went nowhere"); return }
        #expect(told == ["m1", "m3"])
        #expect(machine.watchEnded(1, ids: ["a"]) == nil)
        #expect(machine.watcherCount == 1)
        #expect(try Self.method(machine.watchEnded(3, ids: ["a"])) == "unsubscribe")
        #expect(machine.watcherCount == 0)
        #expect(machine.subscribedIDs == 0)
    }

    @Test("a refused subscribe ends the later watchers of its id too, and a new watcher subscribes again")
    func refusalEndsLaterWatchers() throws {
        var machine = Machine()
        _ = machine.watchStarted("m1", id: 1, ids: ["a"])     // request 1
        _ = machine.watchStarted("m2", id: 2, ids: ["a"])
        let refusal = RPCError(.limitExceeded, "too many subscriptions", data: ["limit": "maxSubscriptionsPerConnection"])
        guard case .failWatchers(let ended, _) = machine.answerReceived(id: 1, result: .failure(refusal)) else {
            Issue.record("the refusal ended no watcher"); return
        }
        #expect(ended == ["m1", "m2"])
        #expect(machine.watcherCount == 0)
        guard case .write(let line) = machine.watchStarted("m3", id: 3, ids: ["a"]) else {
            Issue.record("a new watcher of a refused id did not subscribe"); return
        }
        #expect(try Self.method(line) == "subscribe")
        guard case .settled(_, let told, _) =
            machine.notificationReceived(method: "settled", params: Self.record("a"))
        else { Issue.record("the settlement went nowhere"); return }
        #expect(told == ["m3"])
    }

    @Test("close ends every watcher once, later watchers of an id and a watcher of several ids included")
    func closeEndsEveryWatcherOnce() {
        var machine = Machine()
        _ = machine.watchStarted("many", id: 1, ids: ["a", "b"])
        _ = machine.watchStarted("m2", id: 2, ids: ["a"])
        _ = machine.watchStarted("m3", id: 3, ids: ["b"])
        let end = machine.closeRequested()
        #expect(end.watchers.sorted() == ["m2", "m3", "many"])
        #expect(machine.watcherCount == 0)
        #expect(machine.subscribedIDs == 0)
    }
}
