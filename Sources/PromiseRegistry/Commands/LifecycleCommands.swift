import PromiseJSON
import PromiseModel

/// Which promise a command names.
package enum PromiseReference {
    /// By its id.
    case id(String)
    /// By the bytes of a valid id where the request's line holds them:
    /// valid only while that request is handled, never kept.
    case lentBytes(UnsafeRawBufferPointer)
}

/// What a request that makes a promise asks for when its id is taken.
package enum IfExists: String, CaseIterable {
    /// Refuse it (``RegistryError/alreadyExists(id:state:conflict:)``).
    case error
    /// Answer with the promise that has the id.
    case get
}

/// `create`: a pending promise, under `id` or one the registry makes.
package struct CreateCommand {
    package var id: String?
    package var name: String?
    /// Rejects the promise with a timeout unless it settles within this.
    package var timeoutMilliseconds: UInt64?
    /// Held by the connection that creates it: rejected when it closes.
    package var lease: Bool
    package var ifExists: IfExists
    /// Forget a settled promise of the same id first.
    package var replace: Bool

    /// Refuses `replace` beside `ifExists: .get`, which asks for the opposite.
    package init(
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
    package init(id: String?) {
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
    package func check(replace: Bool) throws(RegistryError) {
        guard replace && self == .get else { return }
        throw .invalidArgument(param: "replace", reason: "\"replace\" and \"ifExists\": \"get\" exclude each other")
    }
}

/// `resolve`: fulfils a pending promise with `value`.
package struct ResolveCommand {
    package var promise: PromiseReference
    package var value: JSONValue

    package init(promise: PromiseReference, value: JSONValue) {
        self.promise = promise
        self.value = value
    }
}

/// `reject`: rejects a pending promise with `reason` ("rejected" when nil).
package struct RejectCommand {
    package var promise: PromiseReference
    package var reason: RemoteRejection?

    package init(promise: PromiseReference, reason: RemoteRejection?) {
        self.promise = promise
        self.reason = reason
    }
}

/// `progress`: a pending promise's progress, `fraction` from 0 to 1.
package struct ProgressCommand {
    package var id: String
    package var fraction: Double
    package var message: String?

    package init(id: String, fraction: Double, message: String?) {
        self.id = id
        self.fraction = fraction
        self.message = message
    }
}
