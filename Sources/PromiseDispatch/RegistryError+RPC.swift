import PromiseJSON
import PromiseModel
import PromiseRPC
import PromiseRegistry

extension RPCError {
    /// The JSON-RPC error for a refusal of the registry: its code and `data`
    /// as docs/PROTOCOL.md ("Errors") pins them, its message the registry's.
    init(_ error: RegistryError) {
        switch error {
        case .noSuchPromise(let id):
            self.init(.noSuchPromise, error.message, data: ["id": .string(id)])
        case .alreadySettled(_, _, let record):
            self.init(.alreadySettled, error.message, data: record)
        case .alreadyExists(let id, let state, _):
            self.init(.alreadyExists, error.message, data: ["id": .string(id), "state": .string(state)])
        case .invalidArgument(let param, _):
            self.init(.invalidParams, error.message, data: ["param": .string(param)])
        case .noSuchPool(let name):
            self.init(.invalidParams, error.message, data: ["param": "pool", "pool": .string(name)])
        case .leasedByAnother(let id, let holder):
            self.init(
                .permissionDenied, error.message,
                data: ["id": .string(id), "connection": .int(Int(clamping: holder))])
        case .limitExceeded(let limit):
            self.init(.limitExceeded, error.message, data: ["limit": .string(limit.name), "value": .int(limit.value)])
        case .reservedConnection(_, let maxConnections):
            self.init(
                .limitExceeded, error.message,
                data: ["limit": "maxConnections", "value": .int(maxConnections), "reserved": true])
        case .waitTimedOut(let id, _, let record):
            self.init(.waitTimedOut, error.message, data: record ?? ["id": .string(id)])
        case .connectionNotOpen:
            self.init(.internalError, error.message)
        }
    }
}

/// Runs `body`, a check of the registry's, and throws what it refuses as
/// its JSON-RPC error.
func refusing<T>(_ body: () throws(RegistryError) -> T) throws(RPCError) -> T {
    do {
        return try body()
    } catch {
        throw RPCError(error)
    }
}
