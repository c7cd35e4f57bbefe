import PromiseStore

/// `all`, `any`, `race` or `allSettled` over the promises `inputIDs`: a new
/// promise that settles as the combinator `kind` says.
package struct CombineCommand {
    package var kind: CombinatorKind
    package var inputIDs: [String]
    /// `all`'s join policy; nil for the other kinds.
    package var policy: AllPolicy?
    /// A fail-fast `all` cancels its pending inputs when one fails.
    package var stopOnFailure: Bool
    package var id: String?
    package var name: String?
    package var ifExists: IfExists
    /// Forget a settled promise of the same id first.
    package var replace: Bool

    /// Refuses `replace` beside `ifExists: .get`, and a replaced id that is
    /// one of the inputs.
    package init(
        kind: CombinatorKind, inputIDs: [String], policy: AllPolicy?, stopOnFailure: Bool, id: String?,
        name: String?, ifExists: IfExists, replace: Bool
    ) throws(RegistryError) {
        try ifExists.check(replace: replace)
        if replace, let id, inputIDs.contains(id) {
            throw .invalidArgument(param: "id", reason: "a combinator cannot replace one of its own inputs")
        }
        self.kind = kind
        self.inputIDs = inputIDs
        self.policy = policy
        self.stopOnFailure = stopOnFailure
        self.id = id
        self.name = name
        self.ifExists = ifExists
        self.replace = replace
    }

    /// Refuses `stopOnFailure` beside any `policy` but fail-fast (nil: not an `all`).
    package static func check(stopOnFailure: Bool, policy: AllPolicy?) throws(RegistryError) {
        guard stopOnFailure && policy != .failFast else { return }
        throw .invalidArgument(
            param: "stopOnFailure",
            reason: "\"stopOnFailure\" needs an all with the fail-fast policy: the others wait for every input")
    }
}
