import Promise
import PromiseJSON
import PromiseModel
import PromiseStore

/// `all`, `any`, `race` and `allSettled`: the core's combinators over remote
/// promises. The new promise is an ordinary remote promise (it can be waited
/// for, chained, cancelled); as in the core, cancelling it counts as a
/// cancelled child of each input, so an input left without any other
/// uncancelled child is cancelled too.
///
/// A reason a combinator makes itself (from its inputs' reasons, or for a
/// value too large) names the combinator as its `origin`; a reason it passes
/// on (`all` fail-fast, `race`) keeps the origin it has.
extension Registry {
    /// `all`, `any`, `race`, `allSettled` → the new promise, or the existing
    /// one for `ifExists: .get`.
    package func combine(_ command: CombineCommand) throws(RegistryError) -> RemotePromise {
        let ids = command.inputIDs
        var inputs: [RemotePromise] = []
        inputs.reserveCapacity(ids.count)
        for id in ids { inputs.append(try entry(id)) }
        let (id, existing) = try claim(command.id, ifExists: command.ifExists, replace: command.replace)
        if let existing { return existing }
        try reserve()

        let (kind, policy, stopOnFailure) = (command.kind, command.policy, command.stopOnFailure)
        let entry = register(
            combined(kind, policy: policy, stopOnFailure: stopOnFailure, inputs, id: id),
            id: id, kind: .combinator(kind), inputIDs: ids, name: command.name)
        entry.policy = policy
        entry.stopOnFailure = stopOnFailure
        return entry
    }

    /// The core combinator `method` (with `policy`, for `all`) over `inputs`:
    /// at a request, and again at start-up for a combinator stored pending.
    ///
    /// What it makes from its inputs is bounded here, where it is made (a
    /// resolve, the hot path, checks nothing): an array value past
    /// `maxValueDepth` or `maxValueBytes` is a -32004 rejection, and a
    /// reason made of its inputs' reasons is ``RemoteRejection/bounded(maxDepth:maxBytes:)``.
    /// Those reasons name `id`, the combinator's, as their origin.
    /// With `stopOnFailure` (a fail-fast `all`), see ``stoppingOnFailure(_:)``.
    func combined(
        _ method: CombinatorKind, policy: AllPolicy?, stopOnFailure: Bool = false, _ inputs: [RemotePromise], id: String
    ) -> Promise<JSONValue> {
        let distinct = DistinctInputs(inputs, promise: promise(of:))
        let promises = distinct.promises
        let spreading = distinct.spreading
        let limits = limits
        let capped: @Sendable ([JSONValue]) throws(RemoteRejection) -> JSONValue = { values in
            try Self.capped(.array(spreading.spread(values)), limits, origin: id)
        }
        if promises.isEmpty && (method == .any || method == .race) {
            return Promise(error: RemoteRejection(message: "no input promises", origin: id))
        }
        switch method {
        case .any:
            return Self.boundingReasons(of: Promise<JSONValue>.any(promises), inputs, spreading, limits, id: id)
        case .race:
            return Promise<JSONValue>.race(promises)
        case .allSettled:
            let boxedInputs = LoopBound(inputs)
            return Promise<JSONValue>.allSettled(promises).then(on: executor) { results in
                try Self.capped(.array(zip(boxedInputs.value, spreading.spread(results)).map { input, result in
                    Self.settledElement(input, result)
                }), limits, origin: id)
            }
        case .all:
            switch policy ?? .failFast {
            case .nulls:
                return Promise<JSONValue>.allReplacingErrorsWithNil(promises).then(on: .inline) { values in
                    try capped(values.map { $0 ?? .null })
                }
            case .allErrors:
                let all = Promise<JSONValue>.all(promises, policy: .allErrors).then(on: .inline) { try capped($0) }
                return Self.boundingReasons(of: all, inputs, spreading, limits, id: id)
            case .ignoreErrors:
                // Over repeated inputs, which value is whose takes the outcome of each.
                guard spreading.repeats else {
                    return Promise<JSONValue>.all(promises, policy: .ignoreErrors).then(on: .inline) { try capped($0) }
                }
                return Promise<JSONValue>.allReplacingErrorsWithNil(promises).then(on: .inline) { values in
                    try Self.capped(.array(spreading.spread(values).compactMap { $0 }), limits, origin: id)
                }
            case .failFast:
                guard stopOnFailure else {
                    return Promise<JSONValue>.all(promises, policy: .failFast).then(on: .inline) { try capped($0) }
                }
                return Self.stoppingOnFailure(promises).then(on: .inline) { try capped($0) }
            }
        }
    }

    /// `value`, unless it nests deeper than `maxValueDepth` or its JSON text
    /// would take more than `maxValueBytes`: each `all` or `allSettled` over
    /// another adds levels, and over one input repeated it multiplies bytes,
    /// while a value deeper or longer than what params may hold could come
    /// back deeper than a strict parser reads, or longer than a store row.
    /// Measured, not written (``JSONValue/serializedByteCount(upTo:)``).
    private static func capped(
        _ value: JSONValue, _ limits: DaemonLimits, origin: String
    ) throws(RemoteRejection) -> JSONValue {
        // Bytes first: that count stops at the bound, and a value within it
        // has few enough nodes for the depth's walk over every one of them.
        try checkValueBytes(value, limits, what: "the combined value", origin: origin)
        let maxDepth = limits.maxValueDepth
        if value.depth > maxDepth {
            throw RemoteRejection(
                code: RejectionCode.limitExceeded,
                message: "the combined value would nest deeper than \(maxDepth) levels",
                data: ["limit": "maxValueDepth", "value": .int(maxDepth)], origin: origin)
        }
        return value
    }

    /// Throws the -32004 rejection for `value` (`what` says which) when its
    /// JSON text would take more than `maxValueBytes`, naming `origin` where it begins.
    static func checkValueBytes(
        _ value: JSONValue, _ limits: DaemonLimits, what: String, origin: String
    ) throws(RemoteRejection) {
        let maxBytes = limits.maxValueBytes
        guard value.serializedByteCount(upTo: maxBytes) > maxBytes else { return }
        throw RemoteRejection(
            code: RejectionCode.limitExceeded,
            message: "\(what) would take more than \(maxBytes) bytes",
            data: ["limit": "maxValueBytes", "value": .int(maxBytes)], origin: origin)
    }

    /// `combined`, whose reason when every input failed (`any`) or some did
    /// (`all-errors`) lists the inputs' reasons, bounded in depth and bytes.
    private static func boundingReasons(
        of combined: Promise<JSONValue>, _ inputs: [RemotePromise], _ spreading: DistinctInputs.Spreading,
        _ limits: DaemonLimits, id: String
    ) -> Promise<JSONValue> {
        let inputIDs = inputs.map(\.id)
        return combined.recover(on: .inline) { error throws -> JSONValue in
            guard error is AggregateError else { throw error }
            throw RemoteRejection(describing: spreading.spread(error), inputIDs: inputIDs, origin: id)
                .bounded(maxDepth: limits.maxValueDepth, maxBytes: limits.maxReasonBytes)
        }
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
