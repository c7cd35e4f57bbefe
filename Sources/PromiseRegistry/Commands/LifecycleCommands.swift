import PromiseJSON
import PromiseModel

/// Which promise a command names.
enum PromiseReference {
    /// By its id.
    case id(String)
    /// By the bytes of a valid id where the request's line holds them:
    /// valid only while that request is handled, never kept.
    case lentBytes(UnsafeRawBufferPointer)
}

/// What a request that makes a promise asks for when its id is taken.
enum IfExists: String, CaseIterable {
    /// Refuse it (``RegistryError/alreadyExists(id:state:conflict:)``).
    case error
    /// Answer with the promise that has the id.
    case get
}

/// `create`: a pending promise, under `id` or one the registry makes.
struct CreateCommand {
    var id: String?
    var name: String?
    /// Rejects the promise with a timeout unless it settles within this.
    var timeoutMilliseconds: UInt64?
    /// Held by the connection that creates it: rejected when it closes.
    var lease: Bool
    var ifExists: IfExists
    /// Forget a settled promise of the same id first.
    var replace: Bool

    /// Refuses `replace` beside `ifExists: .get`, which asks for the opposite.
    init(
        id: String?, name: String? = nil, timeoutMilliseconds: UInt64? = nil, lease: Bool = false,
        ifExists: IfExists = .error, replace: Bool = false
    ) throws(RegistryError) {
        try ifExists.check(replace: replace)
        self.id = id
        self.name = name
        self.timeoutMilliseconds = timeoutMilliseconds
        self.lease = lease
        self.ifExists = ifExists
        self.replace = replace
    }

    /// A promise under `id`, or one the registry names, and nothing else.
    init(id: String?) {
        self.id = id
        name = nil
        timeoutMilliseconds = nil
        lease = false
        ifExists = .error
        replace = false
    }
}

extension IfExists {
    /// Refuses `replace` beside `.get`, which asks for the opposite.
    func check(replace: Bool) throws(RegistryError) {
        guard replace && self == .get else { return }
        throw .invalidArgument(param: "replace", reason: "\"replace\" and \"ifExists\": \"get\" exclude each other")
    }
}

/// `resolve`: fulfils a pending promise with `value`.
struct ResolveCommand {
    var promise: PromiseReference
    var value: JSONValue
}

/// `reject`: rejects a pending promise with `reason` ("rejected" when nil).
struct RejectCommand {
    var promise: PromiseReference
    var reason: RemoteRejection?
}

/// `progress`: a pending promise's progress, `fraction` from 0 to 1.
struct ProgressCommand {
    var id: String
    var fraction: Double
    var message: String?
}
