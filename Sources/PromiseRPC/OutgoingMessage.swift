import PromiseJSON

/// A message on its way to a connection.
///
/// Mostly a `JSONValue`. An answer whose result is a promise record (most
/// answers) is written as JSON text at once (see `RemotePromise.writeRecord`),
/// and a batch carries its answers as they are, so that neither is rebuilt
/// as a dictionary just to be written.
package enum OutgoingMessage {
    case json(JSONValue)
    /// `line` is the whole answer, `{"id":…,"jsonrpc":"2.0","result":…}`
    /// and its newline, whose result is a record or was written out ahead
    /// (``writingResult()``); `id` is kept for ``refusingResults(_:)``.
    case recordResult(id: JSONValue, line: [UInt8])
    /// The answers to a batch, in order, sent as one array.
    case batch([OutgoingMessage])

    /// The answer to request `id` whose result `writeResult` appends as
    /// JSON text: written once, into the buffer that goes to the socket.
    ///
    /// ```swift
    /// .recordResult(id: 7) { entry.writeRecord(now: now, maxChildren: 1_000, to: &$0) }
    /// ```
    package static func recordResult(id: JSONValue, _ writeResult: (inout JSONTextBuffer) -> Void) -> OutgoingMessage {
        // Written as the line it is sent as: most answers are sent alone.
        let line = JSONTextBuffer.line { writeRecordResult(id: id, writeResult, to: &$0) }
        return .recordResult(id: id, line: line)
    }

    /// Appends the JSON text of ``recordResult(id:_:)``'s answer, without its newline.
    ///
    /// Its members are known, so the text between them is appended as two
    /// constant runs, rather than member by member through a
    /// ``JSONObjectWriter`` and its closure (docs/PERFORMANCE.md). Its text
    /// is that of `JSONRPCResponse.result(_:_:)`
    /// holding the record (`RecordJSONTests`).
    @inline(__always)
    package static func writeRecordResult(id: JSONValue, _ writeResult: (inout JSONTextBuffer) -> Void,
                                  to text: inout JSONTextBuffer) {
        text.append(#"{"id":"#)
        id.write(to: &text)
        text.append(#","jsonrpc":"2.0","result":"#)
        writeResult(&text)
        text.append(UInt8(ascii: "}"))
    }

    /// The compact JSON text of the message and its newline, as a peer sends it.
    package func serializedLine() -> [UInt8] {
        if case .recordResult(_, let line) = self { return line }
        return JSONTextBuffer.line { write(to: &$0) }
    }

    /// The text of ``serializedLine()`` in parts that go out back to back
    /// (``RPCPeer/send(parts:)``): a batch's answers as they were written,
    /// between its brackets and commas, without joining them.
    package func serializedParts() -> [ArraySlice<UInt8>] {
        guard case .batch(let answers) = self else { return [serializedLine()[...]] }
        var parts: [ArraySlice<UInt8>] = []
        parts.reserveCapacity(answers.count * 2 + 1)
        for (index, answer) in answers.enumerated() {
            parts.append(index == 0 ? Self.openingBracket : Self.comma)
            // Each answer's line without its newline.
            parts.append(answer.serializedLine().dropLast())
        }
        parts.append(answers.isEmpty ? Self.emptyArrayLine : Self.closingBracketLine)
        return parts
    }

    private static let openingBracket = Array("[".utf8)[...]
    private static let comma = Array(",".utf8)[...]
    private static let closingBracketLine = Array("]\n".utf8)[...]
    private static let emptyArrayLine = Array("[]\n".utf8)[...]

    private func write(to text: inout JSONTextBuffer) {
        switch self {
        case .json(let value):
            value.write(to: &text)
        case .recordResult(_, let line):
            // Within a batch: the text without its newline.
            line.withUnsafeBytes { text.append(UnsafeRawBufferPointer(rebasing: $0.dropLast())) }
        case .batch(let answers):
            text.append(UInt8(ascii: "["))
            for (index, answer) in answers.enumerated() {
                if index > 0 { text.append(UInt8(ascii: ",")) }
                answer.write(to: &text)
            }
            text.append(UInt8(ascii: "]"))
        }
    }

    /// Bytes of the message's JSON text without its newline; counting stops
    /// soon after passing `limit`, so that a huge answer costs no more to
    /// measure than the bound it is measured against.
    package func byteCount(upTo limit: Int) -> Int {
        switch self {
        case .json(let value):
            return value.serializedByteCount(upTo: limit)
        case .recordResult(_, let line):
            return line.count - 1
        case .batch(let answers):
            var total = 1
            for answer in answers where total <= limit {
                total += answer.byteCount(upTo: limit - total) + 1
            }
            return total
        }
    }

    /// The message with its result written out as text now, kept with its
    /// id as ``recordResult(id:line:)`` answers are (errors and other
    /// messages are left as they are). A batch keeps its answers so, each
    /// written in the loop turn that made it: written all at once when the
    /// last member has run, a thousand `list` pages held the loop for seconds.
    package func writingResult() -> OutgoingMessage {
        guard case .json(.object(let members)) = self, members["result"] != nil else { return self }
        return .recordResult(id: members["id"] ?? .null, line: serializedLine())
    }

    /// An error answer carrying `error`, to the same request as this answer.
    package func replaced(by error: RPCError) -> OutgoingMessage {
        switch self {
        case .json(.object(let members)):
            .json(JSONRPCResponse.error(members["id"] ?? .null, error))
        case .recordResult(let id, _):
            .json(JSONRPCResponse.error(id, error))
        case .json, .batch:
            .json(JSONRPCResponse.error(.null, error))
        }
    }

    /// The message with each successful answer in it replaced by an error
    /// answer carrying `error` (for changes the store could not write).
    package func refusingResults(_ error: RPCError) -> OutgoingMessage {
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
