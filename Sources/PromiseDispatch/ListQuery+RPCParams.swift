import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry
import PromiseStore

extension ListQuery {
    /// `state?`, `prefix?`, `limit?` (1…``maxLimit``), `cursor?` (one an
    /// earlier `list` answered), `parent?`.
    init(decoding params: RPCParams) throws(RPCError) {
        let state = try params.choice("state", of: StoredPromise.State.self)
        let prefix = try params.string("prefix")
        let limit = try params.int("limit", in: 1...Self.maxLimit) ?? Self.defaultLimit
        let cursor = try params.string("cursor")
        let parentID = try params.optionalPromiseID("parent")
        self.init(
            state: state, prefix: prefix, parentID: parentID, limit: limit,
            cursor: try RPCParams.cursor(cursor, method: "list"))
    }
}

extension RPCParams {
    /// The position a `cursor` param names (a whole number an earlier call
    /// of `method` answered), nil when absent.
    static func cursor(_ cursor: String?, method: String) throws(RPCError) -> Int? {
        guard let cursor else { return nil }
        guard let position = Int(cursor), position >= 0 else {
            throw invalid("cursor", "\"cursor\" must be a cursor returned by an earlier \(method)")
        }
        return position
    }
}
