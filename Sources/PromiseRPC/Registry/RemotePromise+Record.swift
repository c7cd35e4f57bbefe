/// A promise's record (docs/PROTOCOL.md, "The promise record"), as a
/// `JSONValue` and as JSON text.
///
/// Most answers are a record. Building it as a dictionary, then sorting its
/// members to write them, cost a third of the daemon's instructions per
/// create + resolve (callgrind); `writeRecord` writes the text in one pass.
/// Both forms come from one member list (see ``JSONObjectSink``).
extension RemotePromise {
    /// The record, as every method returns it. `now` stamps `settled` when
    /// the registry has not yet seen the settlement.
    func record(now: Int64) -> JSONValue {
        var builder = JSONObjectBuilder()
        recordMembers(now: now, into: &builder)
        return .object(builder.members)
    }

    /// Appends the record's JSON text to `text`: the bytes of
    /// `record(now:).serialized()`, without building the record.
    func writeRecord(now: Int64, to text: inout JSONTextBuffer) {
        JSONObjectWriter.append(to: &text) { recordMembers(now: now, into: &$0) }
    }

    /// The record's members, in sorted key order.
    private func recordMembers<Sink: JSONObjectSink & ~Copyable>(now: Int64, into object: inout Sink) {
        let result = result(stampingSettledAt: now)
        object.strings("children", childIDs)
        object.value("created", .int(Int(created)))
        if case .then(_, true) = kind { object.strings("exec", ifPresent: job?.spec.argv) }
        object.string("id", id)
        object.strings("inputs", ifPresent: inputIDs)
        object.string("kind", kind.name)
        object.flag("lease", lease)
        object.string("name", orNull: name)
        if case .then(let on, _) = kind { object.string("on", on) }
        object.string("parent", orNull: parentID)
        object.value("progress", .double(progress))
        object.string("progressMessage", ifPresent: progressMessage)
        if case .failure(let error)? = result { object.value("reason", reason(for: error).json) }
        object.value("settled", settled.map { .int(Int($0)) } ?? .null)
        object.string("state", Self.state(of: result))
        object.flag("stopOnFailure", stopOnFailure)
        object.value("timeoutMs", ifPresent: timeoutMilliseconds.map { .int(Int(clamping: $0)) })
        if case .success(let value)? = result { object.value("value", value) }
    }
}
