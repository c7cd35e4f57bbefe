import PromiseJSON
import PromiseRPC

/// `replace: true` on `create` and `then`: a script run again makes its
/// promises under the same ids, each forgetting the settled one of the run
/// before (docs/PROTOCOL.md, "create").
extension Registry {
    /// Reads `replace` and refuses it beside `ifExists: "get"`, which asks for the opposite.
    func replaceParam(_ params: RPCParams, ifExists: String) throws(RPCError) -> Bool {
        let replace = try params.bool("replace") ?? false
        if replace && ifExists == "get" {
            throw RPCParams.invalid("replace", "\"replace\" and \"ifExists\": \"get\" exclude each other")
        }
        return replace
    }

    /// Forgets the settled `existing` so that its id may be made again, or
    /// says why not (-32006): it is pending, or a pending promise needs it.
    func forgetToReplace(_ existing: RemotePromise) throws(RPCError) {
        let data: JSONValue = ["id": .string(existing.id), "state": .string(existing.state)]
        if existing.isPending {
            throw RPCError(
                .alreadyExists, "a promise with id \"\(existing.id)\" is pending: replace forgets only a settled one",
                data: data)
        }
        if existing.dependents > 0 {
            throw RPCError(
                .alreadyExists,
                "a promise with id \"\(existing.id)\" is needed by a pending promise (a then child or a combinator): not replaced",
                data: data)
        }
        remove(existing)
    }
}
