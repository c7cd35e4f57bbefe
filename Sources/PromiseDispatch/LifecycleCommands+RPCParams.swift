import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry

/// The params of `create`, `resolve`, `reject` and `progress` read into
/// the registry's commands, refusing what is missing or malformed with
/// -32602 (docs/PROTOCOL.md, "Methods").
extension CreateCommand {
    /// `id?`, `name?`, `timeoutMs?`, `lease?`, `ifExists?`, `replace?`.
    init(decoding params: RPCParams) throws(RPCError) {
        let requested = try params.optionalPromiseID("id")
        // Most creates name their id and nothing else: the other params are
        // then known to be absent, without looking each of them up.
        guard params.count != (requested == nil ? 0 : 1) else {
            self.init(id: requested)
            return
        }
        let name = try params.string("name")
        let timeout = try params.milliseconds("timeoutMs")
        let lease = try params.bool("lease") ?? false
        let ifExists = try params.choice("ifExists", of: IfExists.self) ?? .error
        let replace = try params.bool("replace") ?? false
        self = try refusing { () throws(RegistryError) in
            try CreateCommand(
                id: requested, name: name, timeoutMilliseconds: timeout, lease: lease, ifExists: ifExists,
                replace: replace)
        }
    }
}

extension ResolveCommand {
    /// `id` (or its bytes, `lentID`, when the line lent them), `value` (null when absent).
    init(decoding params: RPCParams, lentID: LentPromiseID?) throws(RPCError) {
        self.init(promise: try PromiseReference(params, lentID: lentID), value: params["value"] ?? .null)
    }
}

extension RejectCommand {
    /// `id` (or its bytes, `lentID`), `reason?` (an object or a string).
    init(decoding params: RPCParams, lentID: LentPromiseID?) throws(RPCError) {
        let promise = try PromiseReference(params, lentID: lentID)
        guard let reason = params["reason"], !reason.isNull else {
            self.init(promise: promise, reason: nil)
            return
        }
        self.init(promise: promise, reason: try RemoteRejection(json: reason))
    }
}

extension ProgressCommand {
    /// `id`, `progress` (0…1), `message?`.
    init(decoding params: RPCParams) throws(RPCError) {
        let id = try params.promiseID("id")
        guard let fraction = try params.double("progress", in: 0...1) else {
            throw RPCParams.invalid("progress", "missing \"progress\" (a number from 0 to 1)")
        }
        self.init(id: id, fraction: fraction, message: try params.string("message"))
    }
}

extension PromiseReference {
    /// The promise a request's `id` names: by its bytes when the line lent them.
    init(_ params: RPCParams, lentID: LentPromiseID?) throws(RPCError) {
        if let lentID {
            self = .lentBytes(lentID.bytes)
        } else {
            self = .id(try params.promiseID("id"))
        }
    }
}
