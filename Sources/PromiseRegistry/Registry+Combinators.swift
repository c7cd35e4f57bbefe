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
        let distinct = DistinctInputs(inputs, promise: promise(of:))
        let entry = register(
            combined(kind, policy: policy, stopOnFailure: stopOnFailure, distinct, id: id),
            id: id, kind: .combinator(kind), inputIDs: ids, inputs: distinct, name: command.name)
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
        combined(method, policy: policy, stopOnFailure: stopOnFailure, DistinctInputs(inputs, promise: promise(of:)), id: id)
    }

    /// ``combined(_:policy:stopOnFailure:_:id:)`` over inputs found distinct already.
    private func combined(
        _ method: CombinatorKind, policy: AllPolicy?, stopOnFailure: Bool, _ distinct: DistinctInputs, id: String
    ) -> Promise<JSONValue> {
        let promises = distinct.promises
        let spreading = distinct.spreading
        let limits = limits
        let capped: @Sendable ([JSONValue]) throws(RemoteRejection) -> JSONValue = { values in
            try Self.cappedSpread(values, spreading, limits, origin: id)
        }
        if promises.isEmpty && (method == .any || method == .race) {
            return Promise(error: RemoteRejection(message: "no input promises", origin: id))
        }
        switch method {
        case .any:
            return Self.boundingReasons(of: Promise<JSONValue>.any(promises), distinct, limits, id: id)
        case .race:
            return Promise<JSONValue>.race(promises)
        case .allSettled:
            let boxedInputs = LoopBound(distinct.entries)
            return Promise<JSONValue>.allSettled(promises).then(on: executor) { results in
                let elements = zip(boxedInputs.value, results).map { input, result in
                    Self.settledElement(input, result)
                }
                return try Self.cappedSpread(elements, spreading, limits, origin: id)
            }
        case .all:
            switch policy ?? .failFast {
            case .nulls:
                return Promise<JSONValue>.allReplacingErrorsWithNil(promises).then(on: .inline) { values in
                    try capped(values.map { $0 ?? .null })
                }
            case .allErrors:
                let all = Promise<JSONValue>.all(promises, policy: .allErrors).then(on: .inline) { try capped($0) }
                return Self.boundingReasons(of: all, distinct, limits, id: id)
            case .ignoreErrors:
                // Over repeated inputs, which value is whose takes the outcome of each.
                guard spreading.repeats else {
                    return Promise<JSONValue>.all(promises, policy: .ignoreErrors).then(on: .inline) { try capped($0) }
                }
                return Promise<JSONValue>.allReplacingErrorsWithNil(promises).then(on: .inline) { values in
                    try Self.cappedSpread(values, spreading, limits, origin: id) { $0 }
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
        try checkDepth(value.depth, limits, origin: origin)
        return value
    }

    private static func checkDepth(_ depth: Int, _ limits: DaemonLimits, origin: String) throws(RemoteRejection) {
        let maxDepth = limits.maxValueDepth
        guard depth > maxDepth else { return }
        throw RemoteRejection(
            code: RejectionCode.limitExceeded,
            message: "the combined value would nest deeper than \(maxDepth) levels",
            data: ["limit": "maxValueDepth", "value": .int(maxDepth)], origin: origin)
    }

    /// `.array` of `distinct` (one element per distinct input) spread over
    /// the input positions, the elements `value` makes nil left out,
    /// bounded as ``capped(_:_:origin:)`` bounds a value. Each distinct
    /// element is measured once however many positions name it, so that an
    /// `all` over one large value repeated costs the scan of one value.
    private static func cappedSpread<Element>(
        _ distinct: [Element], _ spreading: DistinctInputs.Spreading, _ limits: DaemonLimits, origin: String,
        _ value: (Element) -> JSONValue?
    ) throws(RemoteRejection) -> JSONValue {
        guard let positions = spreading.positions else {
            return try capped(.array(distinct.compactMap(value)), limits, origin: origin)
        }
        let maxBytes = limits.maxValueBytes
        var byteCounts = [Int?](repeating: nil, count: distinct.count)
        var deepest = 0
        var elements: [JSONValue] = []
        elements.reserveCapacity(positions.count)
        // The opening bracket, then each element with the comma or the
        // closing bracket after it.
        var total = 1
        for index in positions {
            guard let element = value(distinct[index]) else { continue }
            let count: Int
            if let known = byteCounts[index] {
                count = known
            } else {
                count = element.serializedByteCount(upTo: maxBytes)
                byteCounts[index] = count
                deepest = max(deepest, element.depth)
            }
            total += 1 + count
            if total > maxBytes {
                throw valueBytesRejection(what: "the combined value", limits, origin: origin)
            }
            elements.append(element)
        }
        try checkDepth(1 + deepest, limits, origin: origin)
        return .array(elements)
    }

    /// ``cappedSpread(_:_:_:origin:_:)`` of values that are all kept.
    private static func cappedSpread(
        _ distinct: [JSONValue], _ spreading: DistinctInputs.Spreading, _ limits: DaemonLimits, origin: String
    ) throws(RemoteRejection) -> JSONValue {
        guard spreading.repeats else { return try capped(.array(distinct), limits, origin: origin) }
        return try cappedSpread(distinct, spreading, limits, origin: origin) { $0 }
    }

    /// Throws the -32004 rejection for `value` (`what` says which) when its
    /// JSON text would take more than `maxValueBytes`, naming `origin` where it begins.
    static func checkValueBytes(
        _ value: JSONValue, _ limits: DaemonLimits, what: String, origin: String
    ) throws(RemoteRejection) {
        let maxBytes = limits.maxValueBytes
        guard value.serializedByteCount(upTo: maxBytes) > maxBytes else { return }
        throw valueBytesRejection(what: what, limits, origin: origin)
    }

    private static func valueBytesRejection(what: String, _ limits: DaemonLimits, origin: String) -> RemoteRejection {
        let maxBytes = limits.maxValueBytes
        return RemoteRejection(
            code: RejectionCode.limitExceeded,
            message: "\(what) would take more than \(maxBytes) bytes",
            data: ["limit": "maxValueBytes", "value": .int(maxBytes)], origin: origin)
    }

    /// `combined`, whose reason when every input failed (`any`) or some did
    /// (`all-errors`) lists the inputs' reasons, bounded in depth and bytes.
    private static func boundingReasons(
        of combined: Promise<JSONValue>, _ inputs: DistinctInputs, _ limits: DaemonLimits, id: String
    ) -> Promise<JSONValue> {
        let spreading = inputs.spreading
        let inputIDs = spreading.spread(inputs.entries.map(\.id))
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
