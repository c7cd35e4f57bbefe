import Promise

/// `all`, `any`, `race` and `allSettled`: the core's combinators over remote
/// promises. The new promise is an ordinary remote promise (it can be waited
/// for, chained, cancelled); as in the core, cancelling it counts as a
/// cancelled child of each input, so an input left without any other
/// uncancelled child is cancelled too.
extension Registry {
    /// The `all` policies, by their protocol names.
    static let allPolicies = ["fail-fast", "all-errors", "ignore-errors", "nulls"]

    /// `all`, `any`, `race`, `allSettled`: `ids`, `policy?` (`all` only),
    /// `id?`, `name?`, `ifExists?` → the new record.
    func combine(_ method: String, _ params: RPCParams) throws(RPCError) -> JSONValue {
        let ids = try params.promiseIDs("ids")
        let policy = method == "all" ? try params.choice("policy", Self.allPolicies) ?? "fail-fast" : nil
        let requested = try params.optionalPromiseID("id")
        let name = try params.string("name")
        let ifExists = try params.choice("ifExists", ["error", "get"]) ?? "error"
        var inputs: [RemotePromise] = []
        inputs.reserveCapacity(ids.count)
        for id in ids { inputs.append(try entry(id)) }
        let (id, existing) = try claim(requested, ifExists: ifExists)
        if let existing { return record(existing) }
        try reserve()

        let entry = register(
            combined(method, policy: policy, inputs), id: id, kind: .combinator(method), inputIDs: ids, name: name)
        entry.policy = policy
        return record(entry)
    }

    /// The core combinator `method` (with `policy`, for `all`) over `inputs`:
    /// at a request, and again at start-up for a combinator stored pending.
    func combined(_ method: String, policy: String?, _ inputs: [RemotePromise]) -> Promise<JSONValue> {
        let promises = inputs.map(\.promise)
        let maxDepth = limits.maxValueDepth
        switch method {
        case "any":
            return Promise<JSONValue>.any(promises)
        case "race":
            return Promise<JSONValue>.race(promises)
        case "allSettled":
            let boxedInputs = LoopBound(inputs)
            return Promise<JSONValue>.allSettled(promises).then(on: executor) { results in
                try Self.capped(JSONValue.array(zip(boxedInputs.value, results).map { input, result in
                    Self.settledElement(input, result)
                }), maxDepth: maxDepth)
            }
        default:
            switch policy {
            case "nulls":
                return Promise<JSONValue>.allReplacingErrorsWithNil(promises).then(on: .inline) { values in
                    try Self.capped(.array(values.map { $0 ?? .null }), maxDepth: maxDepth)
                }
            case "all-errors":
                return Promise<JSONValue>.all(promises, policy: .allErrors).then(on: .inline) {
                    try Self.capped(.array($0), maxDepth: maxDepth)
                }
            case "ignore-errors":
                return Promise<JSONValue>.all(promises, policy: .ignoreErrors).then(on: .inline) {
                    try Self.capped(.array($0), maxDepth: maxDepth)
                }
            default:
                return Promise<JSONValue>.all(promises, policy: .failFast).then(on: .inline) {
                    try Self.capped(.array($0), maxDepth: maxDepth)
                }
            }
        }
    }

    /// `value`, unless it nests deeper than `maxDepth`: each `all` or
    /// `allSettled` over another adds levels, and a value deeper than what
    /// params may hold could come back deeper than a strict parser reads.
    private static func capped(_ value: JSONValue, maxDepth: Int) throws(RemoteRejection) -> JSONValue {
        guard value.depth > maxDepth else { return value }
        throw RemoteRejection(
            code: RPCError.Code.limitExceeded.rawValue,
            message: "the combined value would nest deeper than \(maxDepth) levels",
            data: ["limit": "maxValueDepth", "value": .int(maxDepth)])
    }

    /// One element of an `allSettled` value: `{"id","state","value"|"reason"}`.
    private static func settledElement(_ input: RemotePromise, _ result: Result<JSONValue, any Error>) -> JSONValue {
        switch result {
        case .success(let value):
            return ["id": .string(input.id), "state": "fulfilled", "value": value]
        case .failure(let error):
            let state: JSONValue = error is CancellationError ? "cancelled" : "rejected"
            return ["id": .string(input.id), "state": state, "reason": input.reason(for: error).json]
        }
    }
}
