import PromiseJSON
import PromiseModel
import PromiseRPC
@testable import PromiseDispatch
@testable import PromiseRegistry
import Testing

/// The one mapping from the registry's refusals to JSON-RPC errors: each
/// case's code, message and `data` as docs/PROTOCOL.md ("Errors") pins them.
@Suite("RegistryError on the wire")
struct RegistryErrorWireTests {
    @Test("each refusal maps to its pinned code, message and data", arguments: [
        (RegistryError.noSuchPromise(id: "a"),
         RPCError(.noSuchPromise, #"no promise with id "a""#, data: ["id": "a"])),
        (.alreadySettled(id: "a", state: "fulfilled", record: ["id": "a", "state": "fulfilled"]),
         RPCError(.alreadySettled, #"promise "a" is already fulfilled"#, data: ["id": "a", "state": "fulfilled"])),
        (.alreadyExists(id: "a", state: "pending", conflict: .taken),
         RPCError(.alreadyExists, #"a promise with id "a" already exists"#, data: ["id": "a", "state": "pending"])),
        (.alreadyExists(id: "a", state: "pending", conflict: .pending),
         RPCError(.alreadyExists, #"a promise with id "a" is pending: replace forgets only a settled one"#,
                  data: ["id": "a", "state": "pending"])),
        (.alreadyExists(id: "a", state: "fulfilled", conflict: .needed),
         RPCError(.alreadyExists,
                  #"a promise with id "a" is needed by a pending promise (a then child or a combinator): not replaced"#,
                  data: ["id": "a", "state": "fulfilled"])),
        (.invalidArgument(param: "timeoutMs", reason: "bad"),
         RPCError(.invalidParams, "bad", data: ["param": "timeoutMs"])),
        (.noSuchPool("gpu"),
         RPCError(.invalidParams, #"no pool named "gpu": start promised with --pool gpu=N, or make it with pool.set"#,
                  data: ["param": "pool", "pool": "gpu"])),
        (.leasedByAnother(id: "a", holder: 7),
         RPCError(.permissionDenied, #"promise "a" is leased by another connection"#,
                  data: ["id": "a", "connection": 7])),
        (.limitExceeded(.promises(10)),
         RPCError(.limitExceeded, "too many promises (limit 10)", data: ["limit": "maxPromises", "value": 10])),
        (.limitExceeded(.logsFollowedOnConnection(3)),
         RPCError(.limitExceeded, "too many logs followed on this connection (limit 3)",
                  data: ["limit": "maxSubscriptionsPerConnection", "value": 3])),
        (.limitExceeded(.queued(5)),
         RPCError(.limitExceeded, "too many steps and pool.acquire requests waiting for a slot (limit 5)",
                  data: ["limit": "maxQueued", "value": 5])),
        (.reservedConnection(action: "wait", maxConnections: 2),
         RPCError(.limitExceeded,
                  "too many connections (limit 2): this one was let in to create, settle and read promises only, "
                    + "and cannot wait",
                  data: ["limit": "maxConnections", "value": 2, "reserved": true])),
        (.waitTimedOut(id: "a", timeoutMilliseconds: 50, record: nil),
         RPCError(.waitTimedOut, #"promise "a" was not created and settled within 50 ms"#, data: ["id": "a"])),
        (.waitTimedOut(id: "a", timeoutMilliseconds: 50, record: ["id": "a", "state": "pending"]),
         RPCError(.waitTimedOut, #"promise "a" did not settle within 50 ms"#, data: ["id": "a", "state": "pending"])),
        (.connectionNotOpen(4), RPCError(.internalError, "connection 4 is not open")),
    ])
    func mapsToPinnedError(refusal: RegistryError, expected: RPCError) {
        #expect(RPCError(refusal) == expected)
    }

    @Test("a command's own refusal keeps the param it names and its text on the wire")
    func commandRefusalKeepsParamAndText() throws {
        let params = RPCParams(["id": "a", "exec": .array([])])
        #expect(throws: RPCError(
            .invalidParams, #""exec" must name a program to run: ["program", "arg", …]"#, data: ["param": "exec"])) {
            try ThenCommand(decoding: params)
        }
    }
}
