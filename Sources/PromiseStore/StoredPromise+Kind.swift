extension StoredPromise {
    /// How a stored promise was made: the document's `kind`.
    public enum Kind: Sendable, Hashable {
        /// By `create` (or a `run`'s promise).
        case created
        /// By `then`, following ``StoredPromise/parentID``.
        case then
        /// By a combinator over ``StoredPromise/inputIDs``.
        case combinator(CombinatorKind)

        /// The kind a document names, or nil for a name this code does not know.
        public init?(text: String) {
            switch text {
            case "created": self = .created
            case "then": self = .then
            default:
                guard let combinator = CombinatorKind(rawValue: text) else { return nil }
                self = .combinator(combinator)
            }
        }

        /// The name the document holds.
        public var text: String {
            switch self {
            case .created: "created"
            case .then: "then"
            case .combinator(let combinator): combinator.rawValue
            }
        }
    }

    /// Where a stored promise stands: the document's `state`.
    public enum State: String, Sendable, Hashable, CaseIterable {
        case pending
        case fulfilled
        case rejected
        case cancelled
    }
}
