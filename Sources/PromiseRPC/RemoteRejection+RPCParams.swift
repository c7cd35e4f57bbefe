import PromiseJSON
import PromiseModel

extension RemoteRejection {
    /// Reads a reason as `reject` takes it: an object with a string "message"
    /// (and optionally a whole-number "code" and any "data"), or a bare string
    /// taken as the message.
    ///
    /// - Throws: -32602 (invalid params, naming `param`) for anything else.
    public init(json: JSONValue, param: String = "reason") throws(RPCError) {
        do {
            try self.init(checking: json, param: param)
        } catch {
            throw RPCParams.invalid(error.param, error.message)
        }
    }
}
