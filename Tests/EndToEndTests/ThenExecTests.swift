import Foundation
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// `then` children with and without `exec`, and cancellation through chains.
@Suite("then, exec and cancel propagation")
struct ThenExecTests {
    @Test("a then child without exec follows its parent's value and names it as parent")
    func plainChild() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "p"])
            let child = try E2E.record(client.call("then", ["id": "p", "childId": "p/child"]))
            #expect(child.id == "p/child")
            #expect(child.parent == "p")
            #expect(child.state == .pending)
            try client.call("resolve", ["id": "p", "value": ["v": 1]])
            #expect(try E2E.record(client.call("wait", ["id": "p/child", "timeoutMs": 5000])).value == ["v": 1])
        }
    }

    @Test("a then child on fulfilled is rejected with its parent's rejection")
    func childFollowsRejection() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "p"])
            try client.call("then", ["id": "p", "childId": "c"])
            try client.call("reject", ["id": "p", "reason": ["message": "bad", "code": 3]])
            let child = try E2E.record(client.call("wait", ["id": "c", "timeoutMs": 5000]))
            #expect(child.state == .rejected)
            #expect(child.reasonMessage == "bad")
            #expect(child.reasonCode == 3)
        }
    }

    @Test("exec gets the parent's value as JSON on stdin and fulfils with stdout parsed as JSON")
    func execSuccessJSON() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "p"])
            try client.call("then", ["id": "p", "childId": "c", "exec": ["sh", "-c", "sed 's/2/3/'"]])
            try client.call("resolve", ["id": "p", "value": ["n": 2]])
            let child = try E2E.record(client.call("wait", ["id": "c", "timeoutMs": 10_000]))
            #expect(child.state == .fulfilled)
            #expect(child.value == ["n": 3])
        }
    }

    @Test("exec output that is not JSON becomes a string; cwd and env are applied")
    func execSuccessString() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "p"])
            try client.call("then", [
                "id": "p", "childId": "c", "exec": ["sh", "-c", "echo \"$GREETING from $(pwd)\""],
                "cwd": .string(daemon.directory), "env": ["GREETING": "hello"],
            ])
            try client.call("resolve", ["id": "p", "value": nil])
            let child = try E2E.record(client.call("wait", ["id": "c", "timeoutMs": 10_000]))
            #expect(child.state == .fulfilled)
            let text = child.value?.stringValue?.trimmingCharacters(in: .newlines)
            #expect(text == "hello from \(daemon.directory)")
        }
    }

    @Test("exec exiting non-zero rejects with code = status and message = end of stderr")
    func execFailure() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "p"])
            try client.call("then", ["id": "p", "childId": "c", "exec": ["sh", "-c", "echo starting >&2; echo boom >&2; exit 3"]])
            try client.call("resolve", ["id": "p", "value": 1])
            let child = try E2E.record(client.call("wait", ["id": "c", "timeoutMs": 10_000]))
            #expect(child.state == .rejected)
            #expect(child.reasonCode == 3)
            #expect(child.reasonMessage?.contains("boom") == true)
        }
    }

    @Test("exec of a program that does not exist rejects the child")
    func execMissingProgram() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "p"])
            try client.call("then", ["id": "p", "childId": "c", "exec": ["/nonexistent/program"]])
            try client.call("resolve", ["id": "p", "value": 1])
            #expect(try E2E.record(client.call("wait", ["id": "c", "timeoutMs": 10_000])).state == .rejected)
        }
    }

    @Test("exec on rejected runs only when the parent is rejected")
    func execOnRejected() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "p"])
            try client.call("then", ["id": "p", "childId": "c", "on": "rejected", "exec": ["sh", "-c", "echo '\"handled\"'"]])
            try client.call("reject", ["id": "p", "reason": "failed"])
            let child = try E2E.record(client.call("wait", ["id": "c", "timeoutMs": 10_000]))
            #expect(child.state == .fulfilled)
            #expect(child.value == "handled")
        }
    }

    @Test("cancelling a running exec child kills its whole process group")
    func execCancelKillsGroup() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let pidFile = daemon.directory + "/grandchild.pid"
            try client.call("create", ["id": "p"])
            try client.call("then", [
                "id": "p", "childId": "c",
                "exec": ["sh", "-c", .string("sleep 60 & echo $! > '\(pidFile)'; wait")],
            ])
            try client.call("resolve", ["id": "p", "value": 1])
            let pid = try #require(E2E.pid(fromFile: pidFile))
            #expect(E2E.isAlive(pid))
            let cancelled = try E2E.record(client.call("cancel", ["id": "c"]))
            #expect(cancelled.state == .cancelled)
            #expect(E2E.eventually(timeout: .seconds(8)) { !E2E.isAlive(pid) }, "grandchild \(pid) survived")
            #expect(try E2E.record(client.call("get", ["id": "c"])).state == .cancelled)
        }
    }

    @Test("cancelling a parent cancels every pending descendant down the chain")
    func cancelParentCancelsChain() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "a"])
            try client.call("then", ["id": "a", "childId": "b"])
            try client.call("then", ["id": "b", "childId": "c"])
            try client.call("then", ["id": "a", "childId": "b2"])
            try client.call("cancel", ["id": "a"])
            for id in ["a", "b", "c", "b2"] {
                #expect(try E2E.record(client.call("get", ["id": .string(id)])).state == .cancelled, "\(id)")
            }
        }
    }

    @Test("cancelling the only child cancels the parent too; with a sibling left the parent stays")
    func cancelChildPropagatesUp() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            try client.call("create", ["id": "root"])
            try client.call("then", ["id": "root", "childId": "mid"])
            try client.call("then", ["id": "mid", "childId": "leaf"])
            try client.call("cancel", ["id": "leaf"])
            #expect(E2E.eventually { (try? E2E.record(client.call("get", ["id": "root"])).state) == .cancelled })
            #expect(try E2E.record(client.call("get", ["id": "mid"])).state == .cancelled)

            try client.call("create", ["id": "shared"])
            try client.call("then", ["id": "shared", "childId": "one"])
            try client.call("then", ["id": "shared", "childId": "two"])
            try client.call("cancel", ["id": "one"])
            Thread.sleep(forTimeInterval: 0.1)
            #expect(try E2E.record(client.call("get", ["id": "shared"])).state == .pending)
            #expect(try E2E.record(client.call("get", ["id": "two"])).state == .pending)
        }
    }

    @Test("cancelling the only child of a running exec child cancels it and kills its process")
    func cancelDescendantStopsExec() throws {
        try E2EDaemon.with { daemon in
            let client = try daemon.client()
            let pidFile = daemon.directory + "/job.pid"
            try client.call("create", ["id": "input"])
            try client.call("then", ["id": "input", "childId": "job", "exec": ["sh", "-c", .string("echo $$ > '\(pidFile)'; exec sleep 60")]])
            try client.call("then", ["id": "job", "childId": "report"])
            try client.call("resolve", ["id": "input", "value": 1])
            let pid = try #require(E2E.pid(fromFile: pidFile))
            try client.call("cancel", ["id": "report"])
            #expect(E2E.eventually(timeout: .seconds(8)) { !E2E.isAlive(pid) }, "job process \(pid) survived")
            #expect(try E2E.record(client.call("get", ["id": "job"])).state == .cancelled)
        }
    }
}
