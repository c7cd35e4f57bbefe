/// A message on its way to a connection.
///
/// Mostly a `JSONValue`. An answer whose result is a promise record (most
/// answers) carries the record already written as JSON text (see
/// `RemotePromise.writeRecord`), and a batch carries its answers as they
/// are, so that neither is rebuilt as a dictionary just to be written.
enum OutgoingMessage {
    case json(JSONValue)
    /// `{"id":…,"jsonrpc":"2.0","result":…}` with `record` as the result.
    case recordResult(id: JSONValue, record: [UInt8])
    /// The answers to a batch, in order, sent as one array.
    case batch([OutgoingMessage])

    /// The compact JSON text of the message (no trailing newline).
    func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return out
    }

    private func write(into out: inout [UInt8]) {
        switch self {
        case .json(let value):
            value.write(into: &out)
        case .recordResult(let id, let record):
            JSONObjectWriter.append(to: &out) { object in
                object.value("id", id)
                object.string("jsonrpc", "2.0")
                object.json("result", record)
            }
        case .batch(let answers):
            out.append(UInt8(ascii: "["))
            for (index, answer) in answers.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                answer.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
    }

    /// The message with each successful answer in it replaced by an error
    /// answer carrying `error` (for changes the store could not write).
    func refusingResults(_ error: RPCError) -> OutgoingMessage {
        switch self {
        case .json(.object(let members)) where members["result"] != nil:
            .json(JSONRPCResponse.error(members["id"] ?? .null, error))
        case .json:
            self
        case .recordResult(let id, _):
            .json(JSONRPCResponse.error(id, error))
        case .batch(let answers):
            .batch(answers.map { $0.refusingResults(error) })
        }
    }
}
