import Promise
import PromiseJSON
import PromiseModel
import PromiseStore

/// One remote promise as the registry keeps it: the core promise that *is*
/// the remote promise, plus what the protocol shows about it (id, name,
/// parent, children, timestamps) and the loop-side resources it holds (its
/// timeout timer, its lease, its exec process). Loop thread only.
package final class RemotePromise: PromiseIdentified {
    /// How the promise came to be, for its record's `kind`.
    enum Kind: Equatable {
        case created
        case then(on: ThenTrigger, exec: Bool)
        case combinator(CombinatorKind)

        var name: String {
            switch self {
            case .created: "created"
            case .then: "then"
            case .combinator(let combinator): combinator.rawValue
            }
        }

        /// ``name`` as a literal, when it is one (not for combinators).
        var literalName: StaticString? {
            switch self {
            case .created: "created"
            case .then: "then"
            case .combinator: nil
            }
        }

        /// The kind a store keeps.
        var stored: StoredPromise.Kind {
            switch self {
            case .created: .created
            case .then: .then
            case .combinator(let combinator): .combinator(combinator)
            }
        }

        /// Every kind there is, indexed by ``code``.
        static let all: [Kind] = [.created]
            + ThenTrigger.allCases.flatMap { on in [Kind.then(on: on, exec: false), .then(on: on, exec: true)] }
            + CombinatorKind.allCases.map(Kind.combinator)

        /// One byte instead of a string: a million promises hold one each.
        var code: UInt8 {
            // Every `create` asks: answered without searching `all`, which
            // compares kinds (their strings too) one by one.
            if case .created = self { return 0 }
            return UInt8(Self.all.firstIndex(of: self) ?? 0)
        }
    }

    // The stored properties are laid out in this order, to fill no padding:
    // 88 bytes, a 96-byte heap block (`malloc_usable_size`, tested). Every
    // 4 KB of new heap is a page fault, and a promise made by `create` is
    // most of what the daemon's memory grows by: so the core promise is in
    // the details, the flags are one byte and `settled` is stored without
    // an optional's extra byte (`settledAt`) (docs/PERFORMANCE.md).
    package let id: String
    /// Its outcome once the registry has heard of its settlement (see
    /// ``result``). This and the other fields every request reads or sets
    /// are `@exclusivity(unchecked)`, as the registry's maps are: loop
    /// thread only, and no access spans a call that could reach it again,
    /// so the runtime's check of each access would only cost time, about
    /// ten times per create+resolve pair (docs/PERFORMANCE.md).
    @exclusivity(unchecked) private var outcome: Result<JSONValue, any Error>?
    private let kindCode: UInt8
    @exclusivity(unchecked) private var flags: Flags = []
    /// Pending promises that still need this one: its pending `then`
    /// children and the pending combinators it is an input of, once per
    /// use (an input named three times counts three). While any remain,
    /// retention and `forget` keep it, so that a restart can rebuild them.
    var dependents: UInt32 = 0
    /// Position in creation order, for `list` cursors.
    let sequence: Int
    /// Milliseconds since 1970.
    let created: Int64
    /// ``settled``, with `Int64.min` for none.
    @exclusivity(unchecked) private var settledAt = Int64.min
    /// What only some promises have (a name, a timeout, a command, the
    /// core promise…), kept apart so that the many that have none do not
    /// pay for it: see RemotePromise+Details.swift for the properties that
    /// read it. `@exclusivity(unchecked)` as the registry's maps are (loop
    /// thread only, no access spans a call that could reach it again): a
    /// settlement and each record read it, a runtime check each time.
    @exclusivity(unchecked) var details: Details?

    var kind: Kind { kindCode == 0 ? .created : Kind.all[Int(kindCode)] }
    /// A `then` child without a command, which settles as its parent did.
    /// A `create`d promise is told by its code alone, without making the
    /// kind: every answer to a create or resolve asks.
    var isThenWithoutCommand: Bool {
        guard kindCode != 0, case .then(_, exec: false) = kind else { return false }
        return true
    }

    /// An `all`, `any`, `race` or `allSettled`, told by its code alone
    /// (every snapshot asks).
    var isCombinator: Bool { kindCode >= Self.firstCombinatorCode }

    /// The code of the first combinator in ``Kind/all``, after `created`
    /// and the six `then` kinds: a constant, not looked up in the list.
    static let firstCombinatorCode: UInt8 = 7

    /// When it settled, in milliseconds since 1970.
    var settled: Int64? {
        get { settledAt == .min ? nil : settledAt }
        set { settledAt = newValue ?? .min }
    }

    /// The core promise while it is pending, and until the registry has
    /// acted on its settlement (``compact()``); after that only its outcome
    /// is kept: a settled promise is read far more often than chained, and
    /// the core promise is most of what it costs in memory.
    ///
    /// A promise made by `create` has none until something needs one (a
    /// `then` child, a combinator, `cancel`, progress, a timeout: see
    /// `Registry.promise(of:)`): most are only resolved or rejected, which
    /// ``settleWithoutCore(_:)`` does with no promise to make, observe,
    /// settle and compact (docs/PERFORMANCE.md). So it is kept in the
    /// details, which nearly every promise that needs one has already (its
    /// children, its consumers, its timeout are there).
    private var core: Promise<JSONValue>? {
        get { details?.core }
        set { set(\.core, newValue) }
    }

    /// Set once the registry has acted on the settlement (waiters, subscribers, timer, lease).
    var settlementHandled: Bool { get { flags[.settlementHandled] } set { flags[.settlementHandled] = newValue } }
    /// Set when the registry drops it (forgotten or collected): `order` and
    /// the retention queue keep it until they are compacted, and a flag is
    /// cheaper to test there than looking its id up again.
    var isRemoved: Bool { get { flags[.isRemoved] } set { flags[.isRemoved] = newValue } }
    /// A fulfilled `then` child stored without a value of its own: it has
    /// its parent's (``StoredPromise/valueOfParent``), and counts among the
    /// parent's ``dependents`` for as long as it is held.
    var sharesParentValue: Bool { get { flags[.sharesParentValue] } set { flags[.sharesParentValue] = newValue } }
    /// A fulfilled combinator stored with references to its inputs' values
    /// (``StoredPromise/valueOfInputs``): it counts once among the
    /// ``dependents`` of each input it names, for as long as it is held.
    var sharesInputValues: Bool { get { flags[.sharesInputValues] } set { flags[.sharesInputValues] = newValue } }
    /// A value that is not its parent's, however the parent settles: a
    /// request fulfilled it (a `then` child resolved by a client while its
    /// parent was pending), or it was stored with a value of its own. Such a
    /// child never shares its parent's value (``sharesParentValue``): had it
    /// done so, it came back from a restart with the parent's value.
    var hasOwnValue: Bool { get { flags[.hasOwnValue] } set { flags[.hasOwnValue] = newValue } }
    /// Set once the registry observes the core promise's progress, which it
    /// does from the first subscription on (see `Registry.observeProgress`).
    var observesProgress: Bool { get { flags[.observesProgress] } set { flags[.observesProgress] = newValue } }
    /// Set once it is known that no JSON text of its value is worth keeping
    /// (``ValueTextCache``): not fulfilled, or a short value. Answers then
    /// skip the cache without looking at the value again.
    var hasNoValueText: Bool { get { flags[.hasNoValueText] } set { flags[.hasNoValueText] = newValue } }

    /// The yes-or-no facts about a promise, in one byte.
    private struct Flags: OptionSet {
        let rawValue: UInt8
        static let settlementHandled = Flags(rawValue: 1 << 0)
        static let isRemoved = Flags(rawValue: 1 << 1)
        static let sharesParentValue = Flags(rawValue: 1 << 2)
        static let hasOwnValue = Flags(rawValue: 1 << 3)
        static let observesProgress = Flags(rawValue: 1 << 4)
        static let hasNoValueText = Flags(rawValue: 1 << 5)
        static let sharesInputValues = Flags(rawValue: 1 << 6)

        subscript(flag: Flags) -> Bool {
            get { contains(flag) }
            set { if newValue { insert(flag) } else { remove(flag) } }
        }
    }

    init(id: String, promise: Promise<JSONValue>?, kind: Kind, sequence: Int, parentID: String?,
         inputIDs: [String]?, name: String?, created: Int64) {
        self.id = id
        kindCode = kind.code
        self.sequence = sequence
        self.created = created
        if let parentID { details = Details(parentID: parentID) }
        if let promise { core = promise }
        if let inputIDs { self.inputIDs = inputIDs }
        if let name { self.name = name }
    }

    /// The core promise, while it has one.
    var corePromise: Promise<JSONValue>? { core }

    /// A promise to act on in its place once it is settled and has no core
    /// promise (compacted, or settled without one): settling it again
    /// fails, chaining it works.
    var settledPromise: Promise<JSONValue>? {
        switch outcome {
        case .success(let value)?: Promise(value: value)
        case .failure(let error)?: Promise(error: error)
        case nil: nil
        }
    }

    /// Gives a pending promise that has no core promise `promise` as its
    /// core (see `Registry.promise(of:)`).
    func adoptCore(_ promise: Promise<JSONValue>) {
        precondition(core == nil && outcome == nil, "only a pending promise without a core promise adopts one")
        core = promise
    }

    /// Settles a promise that has no core promise with `result`, as the
    /// core's `fulfill` and `reject` would have: false when it was settled
    /// already. A rejected one keeps the progress it had, which without a
    /// core promise was never reported: 0.
    func settleWithoutCore(_ result: Result<JSONValue, any Error>) -> Bool {
        precondition(core == nil, "a promise with a core promise settles through it")
        guard outcome == nil else { return false }
        outcome = result
        if case .failure = result { finalProgress = 0 }
        return true
    }

    /// Its outcome, once settled.
    var result: Result<JSONValue, any Error>? {
        // The outcome is kept as soon as the registry's observer hears of it
        // (``settledWith(_:)``): reading it from the core promise takes its
        // lock and casts its type-erased outcome back, for every record of
        // a settled promise and again to compact it (docs/PERFORMANCE.md).
        if let outcome { return outcome }
        return core?.result
    }

    /// Keeps `result`, the core promise's settlement, as the registry's
    /// inline observer is told it (on the loop thread, as it settles).
    func settledWith(_ result: Result<JSONValue, any Error>) {
        if outcome == nil { outcome = result }
    }

    /// The outcome, if settled; a settlement the registry has not seen yet
    /// is stamped `settled` at `now`, so that records and stored documents
    /// taken before `didSettle` still give a time.
    func result(stampingSettledAt now: Int64) -> Result<JSONValue, any Error>? {
        let result = self.result
        if result != nil && settled == nil { settled = now }
        return result
    }

    var isPending: Bool { result == nil }

    /// Counts `change` more (or, negative, fewer) pending promises that need this one.
    func addDependents(_ change: Int) {
        let updated = Int(dependents) + change
        assert(updated >= 0, "a dependent of \(id) ended that was never counted")
        dependents = UInt32(clamping: updated)
    }

    /// From 0 to 1: 0 while pending without a core promise (reporting
    /// progress gives it one).
    var progress: Double {
        if let core { return core.progress }
        return outcome == nil ? 0 : finalProgress
    }

    /// Keeps only the outcome of a settled promise and lets go of the core
    /// promise (its pending children, if any, still hold it).
    func compact() {
        guard let core, let result = outcome ?? core.result else { return }
        outcome = result
        finalProgress = core.progress
        self.core = nil
        // A promise that needed details only for its core (one a client
        // subscribed to, say) goes back to having none.
        if details?.isEmpty == true { details = nil }
    }

    /// The protocol state: `pending`, `fulfilled`, `rejected` or `cancelled`.
    var state: String { Self.state(of: result) }

    /// The state name of a promise whose result is `result`.
    static func state(of result: Result<JSONValue, any Error>?) -> String {
        stateName(of: result).description
    }

    /// ``state(of:)`` as a store keeps it.
    static func storedState(of result: Result<JSONValue, any Error>?) -> StoredPromise.State {
        switch result {
        case nil: .pending
        case .success?: .fulfilled
        case .failure(let error)?: error is CancellationError ? .cancelled : .rejected
        }
    }

    /// ``state(of:)`` as the literal it is, which a record writes as it stands.
    static func stateName(of result: Result<JSONValue, any Error>?) -> StaticString {
        switch result {
        case nil: "pending"
        case .success?: "fulfilled"
        case .failure(let error)?: error is CancellationError ? "cancelled" : "rejected"
        }
    }

    /// The reason of a rejected or cancelled promise.
    func reason(for error: any Error) -> RemoteRejection {
        var rejection = RemoteRejection(describing: error, inputIDs: inputIDs)
        if let timeoutMilliseconds, (error as? PromiseError) == .timedOut {
            rejection.message = "timed out after \(timeoutMilliseconds) ms"
            rejection.data = ["timeoutMs": .int(Int(clamping: timeoutMilliseconds))]
        }
        return rejection
    }
}

@available(*, unavailable)
extension RemotePromise: Sendable {}
