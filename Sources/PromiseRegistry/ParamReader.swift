import PromiseJSON
import PromiseRPC

/// A request's named params as the registry reads them: the accessors of
/// ``RPCParams``, each refusal thrown as
/// ``RegistryError/invalidArgument(param:reason:)`` with the same text.
///
/// ```swift
/// let timeout = try params.milliseconds("timeoutMs")   // UInt64?, or invalidArgument("timeoutMs", …)
/// ```
struct ParamReader {
    let params: RPCParams

    init(_ params: RPCParams) {
        self.params = params
    }

    /// How many params the request names.
    var count: Int { params.count }

    subscript(key: String) -> JSONValue? { params[key] }

    func promiseID(_ key: String) throws(RegistryError) -> String {
        try read { () throws(RPCError) in try params.promiseID(key) }
    }

    func optionalPromiseID(_ key: String) throws(RegistryError) -> String? {
        try read { () throws(RPCError) in try params.optionalPromiseID(key) }
    }

    func promiseIDs(_ key: String) throws(RegistryError) -> [String] {
        try read { () throws(RPCError) in try params.promiseIDs(key) }
    }

    func string(_ key: String) throws(RegistryError) -> String? {
        try read { () throws(RPCError) in try params.string(key) }
    }

    func bool(_ key: String) throws(RegistryError) -> Bool? {
        try read { () throws(RPCError) in try params.bool(key) }
    }

    func int(_ key: String, in range: ClosedRange<Int>) throws(RegistryError) -> Int? {
        try read { () throws(RPCError) in try params.int(key, in: range) }
    }

    func milliseconds(_ key: String) throws(RegistryError) -> UInt64? {
        try read { () throws(RPCError) in try params.milliseconds(key) }
    }

    func double(_ key: String, in range: ClosedRange<Double>) throws(RegistryError) -> Double? {
        try read { () throws(RPCError) in try params.double(key, in: range) }
    }

    func choice(_ key: String, _ choices: [String]) throws(RegistryError) -> String? {
        try read { () throws(RPCError) in try params.choice(key, choices) }
    }

    func choice<T: RawRepresentable & CaseIterable>(_ key: String, of type: T.Type) throws(RegistryError) -> T?
    where T.RawValue == String {
        try read { () throws(RPCError) in try params.choice(key, of: type) }
    }

    func strings(_ key: String) throws(RegistryError) -> [String]? {
        try read { () throws(RPCError) in try params.strings(key) }
    }

    func stringMap(_ key: String) throws(RegistryError) -> [String: String]? {
        try read { () throws(RPCError) in try params.stringMap(key) }
    }

    private func read<T>(_ body: () throws(RPCError) -> T) throws(RegistryError) -> T {
        do {
            return try body()
        } catch {
            throw Self.refusal(error)
        }
    }

    /// A -32602 refusal of ``RPCParams`` (its `data` names the param).
    private static func refusal(_ error: RPCError) -> RegistryError {
        .invalidArgument(param: error.data?["param"]?.stringValue ?? "", reason: error.message)
    }
}
