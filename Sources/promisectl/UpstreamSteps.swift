import PromiseClient
import PromiseJSON
import PromiseModel
import PromiseRPC

/// The `exec` steps a promise waited on: itself, and the steps above it
/// through each record's `parent` and `inputs`, for `wait --show-output`.
enum UpstreamSteps {
    /// The most records read (in batches of `get`), so that a huge graph costs a bounded walk.
    static let maxRecords = 1_000
    static let batchSize = 100

    /// The ids of the exec steps at or above `id`, those further up first.
    static func ids(above id: String, with client: BlockingPromiseClient) throws -> [String] {
        var seen: Set<String> = [id]
        var level = [id]
        var steps: [[String]] = []
        while !level.isEmpty, seen.count <= maxRecords {
            var next: [String] = []
            var found: [String] = []
            for start in stride(from: 0, to: level.count, by: batchSize) {
                let chunk = Array(level[start..<min(start + batchSize, level.count)])
                let answers = try client.batch(chunk.map { .init("get", ["id": .string($0)]) }, timeout: nil)
                for case .success(let record) in answers {
                    if record["exec"] != nil, let stepID = record["id"]?.stringValue { found.append(stepID) }
                    let above = [record["parent"]?.stringValue].compactMap { $0 }
                        + (record["inputs"]?.arrayValue ?? []).compactMap(\.stringValue)
                    for upstream in above where seen.count <= maxRecords && seen.insert(upstream).inserted {
                        next.append(upstream)
                    }
                }
            }
            steps.append(found)
            level = next
        }
        return steps.reversed().flatMap { $0 }
    }
}
