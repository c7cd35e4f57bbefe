import Foundation
import PromiseJSON
import PromiseModel
import PromiseRPC
import Testing

/// A fan-out goes on over later loop turns (the core's drain budget), so a
/// crash can cut it half-done: what was acknowledged is on disk, and a
/// restart settles the rest as the fan-out would have.
@Suite("a fan-out cut by a crash")
struct FanOutRestartTests {
    @Test("killed right after cancel or resolve of a parent of 30,000 then children, a restart settles every child",
          arguments: ["cancel", "resolve"])
    func parentSettledBeforeCrash(method: String) throws {
        try E2EDurableDaemon.with { daemon in
            let connection = try E2ERawConnection(path: daemon.socketPath)
            try connection.call("create", ["id": "parent"])
            for start in stride(from: 0, to: 30_000, by: 1_000) {
                try connection.batch((start..<(start + 1_000)).map { index in
                    ("then", ["id": "parent", "childId": .string("kid/\(index)")])
                })
            }
            let params: JSONValue = method == "cancel" ? ["id": "parent"] : ["id": "parent", "value": 5]
            let expected: JSONValue = method == "cancel" ? "cancelled" : "fulfilled"
            #expect(try connection.call(method, params)["state"] == expected)
            let lastBeforeKill = try connection.call("get", ["id": "kid/29999"])["state"] ?? .null
            daemon.kill9()
            try daemon.start()

            let again = try E2ERawConnection(path: daemon.socketPath)
            print("\(method), then SIGKILL: the last child was \(lastBeforeKill) just before it")
            #expect(try again.call("get", ["id": "parent"])["state"] == expected)
            let pending = try again.call("list", ["prefix": "kid/", "state": "pending", "limit": 10])
            #expect(pending["promises"]?.arrayValue?.isEmpty == true, "\(pending)")
            #expect(try again.call("get", ["id": "kid/29999"])["state"] == expected)
            if method == "resolve" {
                #expect(try again.call("get", ["id": "kid/29999"])["value"] == 5)
            }
        }
    }
}
