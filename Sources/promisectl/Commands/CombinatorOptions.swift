import ArgumentParser
import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

/// What `all`, `any`, `race` and `all-settled` share: the inputs and the new id.
struct CombinatorOptions: ParsableArguments {
    @Argument(help: "The input promises' ids.")
    var ids: [String] = []

    @Option(name: .customLong("id"), help: ArgumentHelp("The new promise's id (made by the daemon when absent).", valueName: "new"))
    var newID: String?

    @Flag(help: "With --id: forget a settled promise of that id first, so that a script run again makes it anew (a pending one: exit 5).")
    var replace = false

    /// The plain value (see ``ClientCall``).
    var plain: CombinatorInputs { CombinatorInputs(ids: ids, newID: newID, replace: replace) }

    func validate() throws { try plain.validate() }

    func combine(_ method: String, extra: [String: JSONValue] = [:], with client: BlockingPromiseClient) throws {
        try plain.combine(method, extra: extra, with: client)
    }
}

/// The inputs and the new id, as a plain value (see ``ClientCall``).
struct CombinatorInputs {
    var ids: [String] = []
    var newID: String?
    var replace = false

    func validate() throws {
        if replace && newID == nil { throw ValidationError("--replace needs --id: it replaces the promise of that id") }
    }

    /// Calls `method` with the inputs and prints the new promise's id.
    func combine(_ method: String, extra: [String: JSONValue] = [:], with client: BlockingPromiseClient) throws {
        var params = extra
        params["ids"] = .array(ids.map { .string($0) })
        if let newID { params["id"] = .string(newID) }
        if replace { params["replace"] = true }
        let record = try BlockingPromiseClient.Record(client.call(method, params))
        Output.line(record.id)
    }
}
