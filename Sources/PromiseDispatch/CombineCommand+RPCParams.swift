import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry
import PromiseStore

extension CombineCommand {
    /// The params of combinator `kind`: `ids`, `policy?` (`all` only),
    /// `stopOnFailure?`, `id?`, `name?`, `ifExists?`, `replace?`.
    init(decoding params: RPCParams, kind: CombinatorKind) throws(RPCError) {
        let ids = try params.promiseIDs("ids")
        let policy = kind == .all ? try params.choice("policy", of: AllPolicy.self) ?? .failFast : nil
        let stopOnFailure = try params.bool("stopOnFailure") ?? false
        try refusing { () throws(RegistryError) in try Self.check(stopOnFailure: stopOnFailure, policy: policy) }
        let id = try params.optionalPromiseID("id")
        let name = try params.string("name")
        let ifExists = try params.choice("ifExists", of: IfExists.self) ?? .error
        let replace = try params.bool("replace") ?? false
        self = try refusing { () throws(RegistryError) in
            try CombineCommand(
                kind: kind, inputIDs: ids, policy: policy, stopOnFailure: stopOnFailure, id: id, name: name,
                ifExists: ifExists, replace: replace)
        }
    }
}
