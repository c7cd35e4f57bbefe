/// The outcome of a keyed `Promise.all`: every key's result, and how many failed.
public struct KeyedResults<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// Every key's outcome.
    public let results: [Key: Result<Value, any Error>]

    /// The keys that were fulfilled, with their values.
    public var values: [Key: Value] {
        results.compactMapValues { try? $0.get() }
    }

    /// The keys that were rejected (or cancelled), with their errors.
    public var errors: [Key: any Error] {
        results.compactMapValues { result in
            if case .failure(let error) = result { return error }
            return nil
        }
    }

    /// How many keys were rejected (TheraLynx `after:`'s error count).
    public var errorCount: Int {
        results.values.reduce(0) { count, result in
            if case .failure = result { return count + 1 }
            return count
        }
    }
}

extension Promise {
    /// Waits for every promise of a keyed collection and fulfils with each
    /// key's outcome and the number of failures (TheraLynx `after:`).
    /// Never rejects.
    ///
    /// ```swift
    /// Promise.all(["config": loadConfig(), "user": loadUser()]).then { outcome in
    ///     if outcome.errorCount > 0 { log(outcome.errors) }
    /// }
    /// ```
    public static func all<Key: Hashable & Sendable>(
        _ promises: [Key: Promise<Value>]
    ) -> Promise<KeyedResults<Key, Value>> {
        let keys = Array(promises.keys)
        let settled = allSettled(keys.map { promises[$0]! })
        return settled.then(on: .inline) { outcomes in
            KeyedResults(results: Dictionary(uniqueKeysWithValues: zip(keys, outcomes)))
        }
    }
}
