/// A promise's record (docs/PROTOCOL.md, "The promise record"), as a
/// `JSONValue` and written straight to JSON text.
///
/// Most answers are a record. Building it as a dictionary, then sorting its
/// members to write them, cost a third of the daemon's instructions per
/// create + resolve (callgrind); `writeRecord` writes the same bytes in one
/// pass. The two must agree: RecordJSONTests compares them byte for byte.
extension RemotePromise {
    /// The record, as every method returns it (docs/PROTOCOL.md, "The promise record").
    /// `now` stamps `settled` when the registry has not yet seen the settlement.
    func record(now: Int64) -> JSONValue {
        let result = self.result
        if result != nil && settled == nil { settled = now }
        var members: [String: JSONValue] = [
            "id": .string(id),
            "state": .string(state),
            "parent": parentID.map(JSONValue.string) ?? .null,
            "name": name.map(JSONValue.string) ?? .null,
            "kind": .string(kind.name),
            "children": .array(childIDs.map(JSONValue.string)),
            "progress": .double(progress),
            "created": .int(Int(created)),
            "settled": settled.map { .int(Int($0)) } ?? .null,
        ]
        switch result {
        case .success(let value)?: members["value"] = value
        case .failure(let error)?: members["reason"] = reason(for: error).json
        case nil: break
        }
        if let inputIDs { members["inputs"] = .array(inputIDs.map(JSONValue.string)) }
        if let progressMessage { members["progressMessage"] = .string(progressMessage) }
        if case .then(let on, let exec) = kind {
            members["on"] = .string(on)
            if exec, let job { members["exec"] = .array(job.spec.argv.map(JSONValue.string)) }
        }
        if let timeoutMilliseconds { members["timeoutMs"] = .int(Int(clamping: timeoutMilliseconds)) }
        if lease { members["lease"] = true }
        return .object(members)
    }

    /// Appends the record's JSON text to `out`: exactly the bytes of
    /// `record(now:).serialized()`, members in the same (sorted) order.
    func writeRecord(now: Int64, into out: inout [UInt8]) {
        let result = self.result
        if result != nil && settled == nil { settled = now }
        var object = JSONObjectWriter()
        object.key("children", into: &out)
        JSONValue.writeStrings(childIDs, into: &out)
        object.key("created", into: &out)
        out.append(contentsOf: String(created).utf8)
        if case .then(_, true) = kind, let job {
            object.key("exec", into: &out)
            JSONValue.writeStrings(job.spec.argv, into: &out)
        }
        object.key("id", into: &out)
        JSONValue.writeString(id, into: &out)
        if let inputIDs {
            object.key("inputs", into: &out)
            JSONValue.writeStrings(inputIDs, into: &out)
        }
        object.key("kind", into: &out)
        JSONValue.writeString(kind.name, into: &out)
        if lease {
            object.key("lease", into: &out)
            JSONValue.bool(true).write(into: &out)
        }
        object.key("name", into: &out)
        JSONValue.writeOptionalString(name, into: &out)
        if case .then(let on, _) = kind {
            object.key("on", into: &out)
            JSONValue.writeString(on, into: &out)
        }
        object.key("parent", into: &out)
        JSONValue.writeOptionalString(parentID, into: &out)
        object.key("progress", into: &out)
        JSONValue.double(progress).write(into: &out)
        if let progressMessage {
            object.key("progressMessage", into: &out)
            JSONValue.writeString(progressMessage, into: &out)
        }
        if case .failure(let error)? = result {
            object.key("reason", into: &out)
            reason(for: error).json.write(into: &out)
        }
        object.key("settled", into: &out)
        (settled.map { JSONValue.int(Int($0)) } ?? .null).write(into: &out)
        object.key("state", into: &out)
        JSONValue.writeString(state, into: &out)
        if let timeoutMilliseconds {
            object.key("timeoutMs", into: &out)
            JSONValue.int(Int(clamping: timeoutMilliseconds)).write(into: &out)
        }
        if case .success(let value)? = result {
            object.key("value", into: &out)
            value.write(into: &out)
        }
        object.end(into: &out)
    }
}
