import ArgumentParser
import PromiseRPC

/// What `all`, `any`, `race` and `all-settled` share: the inputs and the new id.
struct CombinatorOptions: ParsableArguments {
    @Argument(help: "The input promises' ids.")
    var ids: [String] = []

    @Option(name: .customLong("id"), help: ArgumentHelp("The new promise's id (made by the daemon when absent).", valueName: "new"))
    var newID: String?

    /// The plain value (see ``ClientCall``).
    var plain: CombinatorInputs { CombinatorInputs(ids: ids, newID: newID) }

    func combine(_ method: String, extra: [String: JSONValue] = [:], with client: PromiseClient) throws {
        try plain.combine(method, extra: extra, with: client)
    }
}

/// The inputs and the new id, as a plain value (see ``ClientCall``).
struct CombinatorInputs {
    var ids: [String] = []
    var newID: String?

    /// Calls `method` with the inputs and prints the new promise's id.
    func combine(_ method: String, extra: [String: JSONValue] = [:], with client: PromiseClient) throws {
        var params = extra
        params["ids"] = .array(ids.map { .string($0) })
        if let newID { params["id"] = .string(newID) }
        let record = try PromiseClient.Record(client.call(method, params))
        Output.line(record.id)
    }
}
