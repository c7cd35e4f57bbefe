import PromiseJSON

/// Where a fulfilled combinator's value comes from among its inputs'
/// values, so that a store keeps references to the inputs instead of copies
/// (docs/DURABILITY.md, "Retention"): an `all` over one 200 KB value named
/// 80 times is a 16 MB value made of one string, and its row holds 80 numbers.
///
/// For `any` and `race`, ``sources`` has one element: the input whose value
/// is the combinator's. For `all` and `allSettled`, one per element of the
/// value array: the input whose value that element is (for `allSettled`,
/// whose `{"id","state":"fulfilled","value"}` element it is), or nil for an
/// element stored in place (a `null` of the `nulls` policy, a rejected
/// input's element, a value that is not an input's own).
///
/// ```swift
/// let references = InputValueReferences(kind: .all, value: [big, big], inputIDs: ["a", "a"], inputValues: [big, big])
/// references?.sources                      // [0, 1]
/// references?.remainder(of: [big, big])    // nil: nothing is stored in place
/// ```
public struct InputValueReferences: Sendable, Hashable {
    /// Input indexes, as described on the type.
    public var sources: [Int?]

    public init(sources: [Int?]) {
        self.sources = sources
    }

    /// The references of `value`, the value of a `kind` combinator over
    /// `inputIDs` whose fulfilled inputs have `inputValues` (nil for one not
    /// fulfilled), or nil when no part of it is an input's value.
    ///
    /// An element is taken for an input's value only when it is that very
    /// value in memory (``JSONValue/isSameInstance(as:)``): never equal text
    /// that merely looks alike (`"é"` written two ways compares equal as a
    /// Swift string). Elements are paired with inputs by position, or, for
    /// an `ignore-errors` array shorter than its inputs, with the fulfilled
    /// inputs in order: each is looked at once. Only values worth a
    /// reference are referred to (``isWorthReferencing(_:)``): a small one
    /// is stored in place and keeps no input from being collected.
    public init?(kind: CombinatorKind, value: JSONValue, inputIDs: [String], inputValues: [JSONValue?]) {
        guard inputIDs.count == inputValues.count else { return nil }
        switch kind {
        case .any, .race:
            guard Self.isWorthReferencing(value),
                  let index = inputValues.firstIndex(where: { $0?.isSameInstance(as: value) == true })
            else { return nil }
            sources = [index]
        case .all:
            guard case .array(let elements) = value else { return nil }
            let candidates = elements.count == inputValues.count
                ? Array(inputValues.indices) : inputValues.indices.filter { inputValues[$0] != nil }
            guard candidates.count == elements.count else { return nil }
            sources = zip(elements, candidates).map { element, index in
                Self.isWorthReferencing(element) && inputValues[index]?.isSameInstance(as: element) == true ? index : nil
            }
        case .allSettled:
            guard case .array(let elements) = value, elements.count == inputValues.count else { return nil }
            sources = elements.indices.map { index in
                guard let inputValue = inputValues[index], Self.isWorthReferencing(inputValue),
                      Self.settledElement(inputIDs[index], inputValue).isSameElement(as: elements[index])
                else { return nil }
                return index
            }
        }
        guard sources.contains(where: { $0 != nil }) else { return nil }
    }

    /// Whether `value` is referred to rather than stored in place: a
    /// string of at least ``minimumStringBytes`` bytes, or a non-empty array
    /// or object (a combinator's value, say). Told without walking it.
    static func isWorthReferencing(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let string): string.utf8.count >= minimumStringBytes
        case .array(let elements): !elements.isEmpty
        case .object(let members): !members.isEmpty
        default: false
        }
    }

    /// The shortest string referred to: shorter ones cost about as much
    /// stored in place as a reference does.
    static let minimumStringBytes = 128

    /// What is stored beside ``sources``: nil when every part is a
    /// reference (always so for `any` and `race`), else `value`'s array
    /// with `null` in place of each element that is a reference.
    public func remainder(of value: JSONValue) -> JSONValue? {
        guard case .array(let elements) = value, sources.contains(nil), elements.count == sources.count else {
            return nil
        }
        return .array(zip(elements, sources).map { element, source in source == nil ? element : .null })
    }

    /// The value these references describe, rebuilt from the inputs (at
    /// start-up): the inputs' very values, so shared in memory again. Throws
    /// the reason when the stored form does not fit the inputs.
    ///
    /// - Parameters:
    ///   - kind: the combinator's method.
    ///   - remainder: what ``remainder(of:)`` gave, as stored.
    ///   - inputIDs: the combinator's inputs.
    ///   - inputValues: their values, nil for an input not held or not fulfilled.
    public func value(
        kind: CombinatorKind, remainder: JSONValue?, inputIDs: [String], inputValues: [JSONValue?]
    ) throws(InputValueReferenceError) -> JSONValue {
        func input(_ source: Int) throws(InputValueReferenceError) -> JSONValue {
            guard inputValues.indices.contains(source), inputIDs.count == inputValues.count else {
                throw .malformed("input \(source) of \(inputIDs.count)")
            }
            guard let value = inputValues[source] else { throw .inputMissing(inputIDs[source]) }
            return value
        }
        switch kind {
        case .any, .race:
            guard sources.count == 1, let source = sources[0], remainder == nil else { throw .malformed("one input expected") }
            return try input(source)
        case .all, .allSettled:
            var stored: [JSONValue]?
            if let remainder {
                guard case .array(let elements) = remainder, elements.count == sources.count else {
                    throw .malformed("the value stored in place does not match its references")
                }
                stored = elements
            }
            var elements: [JSONValue] = []
            elements.reserveCapacity(sources.count)
            for (position, source) in sources.enumerated() {
                guard let source else {
                    guard let stored else { throw .malformed("element \(position) is neither referenced nor stored") }
                    elements.append(stored[position])
                    continue
                }
                let value = try input(source)
                elements.append(kind == .all ? value : Self.settledElement(inputIDs[source], value))
            }
            return .array(elements)
        }
    }

    /// An `allSettled` element for a fulfilled input.
    private static func settledElement(_ id: String, _ value: JSONValue) -> JSONValue {
        ["id": .string(id), "state": "fulfilled", "value": value]
    }
}

/// Why a combinator's value could not be rebuilt from its stored references.
public enum InputValueReferenceError: Error, Hashable, Sendable {
    /// The input it refers to is not held or not fulfilled.
    case inputMissing(String)
    /// The references do not fit the inputs or the value stored in place.
    case malformed(String)
}

extension JSONValue {
    /// Whether `other` is this very value: the same scalar, or a string,
    /// array or object that uses the same storage in memory (so the same
    /// bytes). False for equal values held apart, and for numbers other
    /// than integers (`0.0` and `-0.0` compare equal but are written apart).
    /// Costs the same for any size.
    public func isSameInstance(as other: JSONValue) -> Bool {
        switch (self, other) {
        case (.null, .null): return true
        case (.bool(let left), .bool(let right)): return left == right
        case (.int(let left), .int(let right)): return left == right
        case (.string(let left), .string(let right)): return Self.sameBits(left, right)
        case (.array(let left), .array(let right)): return Self.sameBits(left, right)
        case (.object(let left), .object(let right)): return Self.sameBits(left, right)
        default: return false
        }
    }

    /// An `allSettled` element made for `input`'s value, compared member by
    /// member: the element holds the same value, its own id and state.
    fileprivate func isSameElement(as other: JSONValue) -> Bool {
        guard case .object(let mine) = self, case .object(let theirs) = other, mine.count == theirs.count else {
            return false
        }
        return mine.allSatisfy { key, value in
            guard let their = theirs[key] else { return false }
            return key == "value" ? value.isSameInstance(as: their) : Self.sameText(value, their)
        }
    }

    /// Two short strings (an id, a state) written the same, byte for byte.
    private static func sameText(_ left: JSONValue, _ right: JSONValue) -> Bool {
        guard case .string(let first) = left, case .string(let second) = right else { return false }
        return first.utf8.elementsEqual(second.utf8)
    }

    /// Whether two values of a copy-on-write type have the same bits: the
    /// same storage reference (and, for a string, the same length and
    /// flags, or the same inline bytes of a short one).
    private static func sameBits<T>(_ left: T, _ right: T) -> Bool {
        withUnsafeBytes(of: left) { leftBytes in
            withUnsafeBytes(of: right) { leftBytes.elementsEqual($0) }
        }
    }
}
