/// The combinator a promise was made with: the method's name, and the
/// stored promise's and the record's `kind`.
public enum CombinatorKind: String, Sendable, Hashable, CaseIterable {
    case all
    case any
    case race
    case allSettled
}
