import Promise
import PromiseJSON

/// The distinct promises among a combinator's inputs, and for each input
/// position the distinct promise it names.
///
/// A combinator over one id named n times watches one promise, not n: its
/// core combinator runs over the distinct promises, and what it makes of
/// them (values, outcomes, failures with their positions) is spread back
/// over the positions the request named. Making, settling and cancelling
/// such a combinator then costs the distinct inputs, not the mentions, and
/// cancelling it withdraws one handler from the input instead of n.
///
/// ```swift
/// let distinct = DistinctInputs([a, b, a])           // a's entry named twice
/// distinct.promises                                   // [a, b]
/// distinct.spreading.spread(["x", "y"])               // ["x", "y", "x"]
/// ```
struct DistinctInputs {
    /// One per distinct input, in the order of first mention.
    let promises: [Promise<JSONValue>]
    /// The entries behind ``promises``, index by index.
    let entries: [RemotePromise]
    /// How results over ``promises`` spread over the input positions.
    let spreading: Spreading

    init(_ inputs: [RemotePromise], promise: (RemotePromise) -> Promise<JSONValue>) {
        var firstIndex: [ObjectIdentifier: Int] = [:]
        firstIndex.reserveCapacity(inputs.count)
        var distinct: [Promise<JSONValue>] = []
        distinct.reserveCapacity(inputs.count)
        var entries: [RemotePromise] = []
        entries.reserveCapacity(inputs.count)
        var positions: [Int] = []
        positions.reserveCapacity(inputs.count)
        for input in inputs {
            let index = firstIndex[ObjectIdentifier(input), default: distinct.count]
            if index == distinct.count {
                firstIndex[ObjectIdentifier(input)] = index
                distinct.append(promise(input))
                entries.append(input)
            }
            positions.append(index)
        }
        self.promises = distinct
        self.entries = entries
        self.spreading = Spreading(
            positions: distinct.count == inputs.count ? nil : positions, distinctCount: distinct.count)
    }

    /// How many input positions there are (the request's mentions).
    var mentionCount: Int { spreading.positions?.count ?? entries.count }

    /// For each of ``entries``, how many input positions name it.
    var mentionsPerEntry: [Int] {
        guard let positions = spreading.positions else { return Array(repeating: 1, count: entries.count) }
        var counts = Array(repeating: 0, count: entries.count)
        for index in positions { counts[index] += 1 }
        return counts
    }

    /// For each input position, the index of its distinct input; kept by
    /// the handlers that spread a combinator's result, without its inputs.
    struct Spreading: Sendable {
        /// Nil when no input repeats: positions and distinct indices are the same.
        let positions: [Int]?
        let distinctCount: Int

        /// Whether some input is named more than once.
        var repeats: Bool { positions != nil }

        /// `distinctValues` (one per distinct input) spread over the input positions.
        func spread<Element>(_ distinctValues: [Element]) -> [Element] {
            guard let positions else { return distinctValues }
            precondition(distinctValues.count == distinctCount, "one value per distinct input")
            return positions.map { distinctValues[$0] }
        }

        /// `error`, with an ``AggregateError`` over the distinct inputs made
        /// one over the input positions: each failure listed at every
        /// position that names its input, in position order.
        func spread(_ error: any Error) -> any Error {
            guard let positions, let aggregate = error as? AggregateError else { return error }
            var failureAt = [(any Error)?](repeating: nil, count: distinctCount)
            for failure in aggregate.failures { failureAt[failure.index] = failure.error }
            var failures: [(index: Int, error: any Error)] = []
            for (position, distinctIndex) in positions.enumerated() {
                if let failure = failureAt[distinctIndex] { failures.append((position, failure)) }
            }
            return AggregateError(failures: failures)
        }
    }
}
