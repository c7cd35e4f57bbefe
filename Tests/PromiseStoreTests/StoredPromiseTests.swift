import PromiseJSON
import PromiseModel
import PromiseStore
import Testing

@Suite("StoredPromise")
struct StoredPromiseTests {
    static let full = StoredPromise(
        id: "ünïcode-✓", sequence: 3, kind: .combinator(.all), parentID: "parent", inputIDs: ["a", "b"], on: .settled,
        exec: ["/bin/true", "arg with space"], cwd: "/tmp", env: ["K": "v", "EMPTY": ""], policy: .ignoreErrors,
        name: "joined", created: 1_700_000_000_000, settled: 1_700_000_000_500, state: .rejected,
        value: ["kept": [1, 2.5, nil, false]], reason: ["message": "boom", "data": ["exit": 2]], progress: 0.75,
        progressMessage: "3/4", timeoutMilliseconds: 1_500, deadline: 1_700_000_001_500, lease: true, execStarted: true,
        pool: "cc", queueTicket: 42, retry: 2, retryDelayMs: 500, attempts: 1)

    static let bare = StoredPromise(id: "b", sequence: 0, kind: .created, created: 0)

    /// A valid document with `key` replaced by `value` (or removed when nil).
    static func document(_ key: String, _ value: JSONValue?) -> JSONValue {
        var members = bare.json.objectValue ?? [:]
        members[key] = value
        return .object(members)
    }

    @Test("a promise read back from its json equals the original", arguments: [full, bare])
    func jsonRoundTrip(promise: StoredPromise) throws {
        #expect(try StoredPromise(json: promise.json) == promise)
        let reparsed = try JSONValue(parsing: promise.json.serialized())
        #expect(try StoredPromise(json: reparsed) == promise)
    }

    @Test("the document written directly is byte for byte the serialized json value",
          arguments: [full, bare,
                      StoredPromise(id: "n", sequence: 9, kind: .then, parentID: "p", on: .fulfilled,
                                    created: -5, settled: 7, state: .fulfilled, value: .null, progress: 1),
                      StoredPromise(id: "q\"\n", sequence: 1, kind: .created, created: 1, state: .cancelled,
                                    reason: ["message": "cancelled"], progress: 0, timeoutMilliseconds: .max)])
    func directDocumentMatchesValue(promise: StoredPromise) {
        #expect(String(decoding: promise.serializedJSON(), as: UTF8.self)
            == String(decoding: promise.json.serialized(), as: UTF8.self))
    }

    @Test("the document leaves out absent and false members")
    func bareDocument() {
        #expect(Self.bare.json == ["id": "b", "sequence": 0, "kind": "created", "created": 0, "state": "pending"])
    }

    @Test("an explicit null optional member reads as absent")
    func nullOptional() throws {
        let promise = try StoredPromise(json: Self.document("name", .null))
        #expect(promise.name == nil)
        #expect(promise == Self.bare)
    }

    @Test("a document that is not an object is refused")
    func notAnObject() {
        #expect(throws: PromiseStoreError("a stored promise is not an object")) {
            try StoredPromise(json: ["id", "b"])
        }
    }

    @Test("a missing required member is named", arguments: ["id", "sequence", "kind", "created", "state"])
    func missingMember(key: String) {
        #expect(throws: PromiseStoreError("a stored promise has no \"\(key)\"")) {
            try StoredPromise(json: Self.document(key, nil))
        }
    }

    @Test(
        "a member of the wrong type is named",
        arguments: [
            ("id", 5), ("sequence", "one"), ("kind", true), ("created", 1.5), ("state", [:]),
            ("inputs", ["a", 1]), ("exec", "ls"), ("env", ["K": 1]), ("settled", "soon"),
            ("progress", "half"), ("lease", "yes"), ("execStarted", 1), ("timeoutMs", [1]),
            ("pool", 3), ("queueTicket", "first"),
        ] as [(String, JSONValue)])
    func malformedMember(key: String, value: JSONValue) {
        #expect(throws: PromiseStoreError("a stored promise has a malformed \"\(key)\"")) {
            try StoredPromise(json: Self.document(key, value))
        }
    }

    @Test("a kind, state, on or policy this code does not know is refused, naming the promise, never read as a default",
          arguments: [("state", "done"), ("kind", "sleep"), ("kind", "All"), ("on", "always"), ("policy", "failFast")])
    func unknownName(key: String, text: String) {
        #expect(throws: PromiseStoreError("stored promise \"b\" has an unknown \(key) \"\(text)\"")) {
            try StoredPromise(json: Self.document(key, .string(text)))
        }
    }

    @Test("every known kind, state, on and policy reads back as itself")
    func knownNames() throws {
        let kinds: [StoredPromise.Kind] = [.created, .then] + CombinatorKind.allCases.map(StoredPromise.Kind.combinator)
        for kind in kinds {
            #expect(try StoredPromise(json: Self.document("kind", .string(kind.text))).kind == kind)
        }
        for state in StoredPromise.State.allCases {
            #expect(try StoredPromise(json: Self.document("state", .string(state.rawValue))).state == state)
        }
        for on in ThenTrigger.allCases {
            #expect(try StoredPromise(json: Self.document("on", .string(on.rawValue))).on == on)
        }
        for policy in AllPolicy.allCases {
            #expect(try StoredPromise(json: Self.document("policy", .string(policy.rawValue))).policy == policy)
        }
        #expect(kinds.map(\.text) == ["created", "then", "all", "any", "race", "allSettled"])
        #expect(AllPolicy.allCases.map(\.rawValue) == ["fail-fast", "all-errors", "ignore-errors", "nulls"])
    }
}

@Suite("MemoryPromiseStore")
struct MemoryPromiseStoreTests {
    static func promise(_ id: String, _ sequence: Int) -> StoredPromise {
        StoredPromise(id: id, sequence: sequence, kind: .created, created: 0)
    }

    @Test("load returns promises in ascending sequence")
    func loadOrder() throws {
        let store = MemoryPromiseStore([Self.promise("c", 3)])
        try store.commit(StoreBatch(upserts: [Self.promise("a", 1), Self.promise("b", 2), Self.promise("z", 0)]))
        #expect(try store.load().promises.map(\.id) == ["z", "a", "b", "c"])
        #expect(store.location == "memory")
    }

    @Test("deletions run before the batch's upserts and remove only a matching id and sequence")
    func deletionsAndUpserts() throws {
        let store = MemoryPromiseStore([Self.promise("a", 1), Self.promise("b", 2), Self.promise("c", 3)])
        var replaced = Self.promise("b", 2)
        replaced.state = .fulfilled
        try store.commit(StoreBatch(upserts: [replaced], deletions: [
            Self.promise("a", 1).deletion, Self.promise("b", 2).deletion, StoreDeletion(id: "unknown", sequence: 4),
            StoreDeletion(id: "c", sequence: 1),
        ]))
        #expect(try store.load().promises == [replaced, Self.promise("c", 3)])
        #expect(store["a"] == nil)
        #expect(store.commitCount == 1)
    }

    @Test("a store told to fail throws that error and applies nothing until told otherwise")
    func failCommits() throws {
        let store = MemoryPromiseStore([Self.promise("a", 1)])
        store.failCommits = PromiseStoreError("disk full")
        let batch = StoreBatch(upserts: [Self.promise("b", 2)], deletions: [Self.promise("a", 1).deletion])
        #expect(throws: PromiseStoreError("disk full")) { try store.commit(batch) }
        #expect(try store.load().promises == [Self.promise("a", 1)])
        #expect(store.commitCount == 0)

        store.failCommits = nil
        try store.commit(batch)
        #expect(try store.load().promises == [Self.promise("b", 2)])
        #expect(store.commitCount == 1)
    }
}
