import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry

extension CancelPrefixCommand {
    /// `prefix` (non-empty), `cursor?`.
    init(decoding params: RPCParams) throws(RPCError) {
        guard let prefix = try params.string("prefix") else { throw RPCParams.invalid("prefix", "missing \"prefix\"") }
        self = try refusing { () throws(RegistryError) in try CancelPrefixCommand(prefix: prefix) }
        cursor = try RPCParams.cursor(try params.string("cursor"), method: "cancelPrefix")
    }
}

extension ForgetCommand {
    /// `ids`, or `prefix` (non-empty) and `cursor?`.
    init(decoding params: RPCParams) throws(RPCError) {
        guard let prefix = try params.string("prefix") else {
            self = .ids(try params.promiseIDs("ids"))
            return
        }
        if params["ids"] != nil { throw RPCParams.invalid("prefix", "\"ids\" and \"prefix\" exclude each other") }
        try refusing { () throws(RegistryError) in _ = try ForgetCommand.prefix(prefix, after: nil) }
        let cursor = try RPCParams.cursor(try params.string("cursor"), method: "forget")
        self = .prefix(prefix, cursor: cursor)
    }
}
