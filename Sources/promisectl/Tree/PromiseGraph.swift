import PromiseClient
import PromiseModel
import PromiseRPC

/// The promises under one id, as `promisectl tree` draws them: the root,
/// its `then` children, the combinators it is an input of (the record's
/// `consumers`), and theirs in turn, each fetched once.
///
/// Built breadth first from records a caller fetches in batches (``load``),
/// so that a graph of thousands of steps takes a few dozen requests and
/// stops at `maxNodes`. Ids in `children` and `consumers` may name a
/// promise that was forgotten and whose id was taken again: an edge counts
/// only when the record at its end says so (its `parent`, or its `inputs`).
///
/// ```swift
/// let graph = try PromiseGraph.load(root: record, maxNodes: 10_000) { ids in try fetchRecords(ids) }
/// print(TreeRenderer(style: .box).lines(for: graph, now: now).joined(separator: "\n"))
/// ```
struct PromiseGraph {
    /// A link from a promise to one that follows it.
    struct Edge: Equatable {
        enum Kind: Equatable {
            /// `to` is a `then` child of `from`.
            case child
            /// `to` is a combinator with `from` among its inputs.
            case input
        }

        var from: String
        var to: String
        var kind: Kind
    }

    let rootID: String
    /// Every promise found, in the order it was found (the root first).
    private(set) var nodes: [RecordView] = []
    /// `maxNodes` was reached before everything under the root was found.
    private(set) var isTruncated = false
    private var positions: [String: Int] = [:]

    private init(rootID: String) {
        self.rootID = rootID
    }

    func view(_ id: String) -> RecordView? {
        positions[id].map { nodes[$0] }
    }

    /// The links from `id` to promises in the graph: `then` children first,
    /// then the combinators it is an input of, each in record order.
    func downstream(of id: String) -> [Edge] {
        guard let view = view(id) else { return [] }
        let children = view.children.map { Edge(from: id, to: $0, kind: .child) }
        let consumers = view.consumers.map { Edge(from: id, to: $0, kind: .input) }
        var seen = Set<String>()
        return (children + consumers).filter { edge in
            guard let target = self.view(edge.to), Self.confirms(target, edge) else { return false }
            return seen.insert(edge.to).inserted
        }
    }

    /// Every link in the graph, node by node in the order found.
    var edges: [Edge] {
        nodes.flatMap { downstream(of: $0.id) }
    }

    /// Whether `view` is where a failure started (``RecordView/isFailingStep``),
    /// judged from what it follows as far as the graph knows it: a combinator
    /// with an input outside the graph is taken to pass a failure on.
    func isFailingStep(_ view: RecordView) -> Bool {
        let upstreamRejected: Bool
        if !view.inputs.isEmpty {
            upstreamRejected = view.inputs.contains { self.view($0).map { $0.state != "fulfilled" } ?? true }
        } else if let parent = view.parent {
            upstreamRejected = self.view(parent)?.state == "rejected"
        } else {
            upstreamRejected = false
        }
        return view.isFailingStep(upstreamRejected: upstreamRejected)
    }

    /// Finds everything under `root`, level by level, asking `fetch` for
    /// the records of at most `batchSize` ids at a time; `fetch` leaves out
    /// ids that have no promise. Stops once `maxNodes` promises are in the
    /// graph (``isTruncated``), so at most `maxNodes / batchSize + levels`
    /// requests are made.
    static func load(
        root: BlockingPromiseClient.Record, maxNodes: Int, batchSize: Int = 50,
        fetch: ([String]) throws -> [BlockingPromiseClient.Record]
    ) rethrows -> PromiseGraph {
        precondition(maxNodes >= 1 && batchSize >= 1)
        var graph = PromiseGraph(rootID: root.id)
        graph.add(RecordView(root))
        var level = graph.unknownTargets(of: [root.id])
        while !level.isEmpty {
            var found: [String] = []
            var start = 0
            while start < level.count {
                let room = maxNodes - graph.nodes.count
                guard room > 0 else {
                    graph.isTruncated = true
                    return graph
                }
                let batch = Array(level[start..<min(level.count, start + min(batchSize, room))])
                start += batch.count
                for record in try fetch(batch) where graph.positions[record.id] == nil && batch.contains(record.id) {
                    let view = RecordView(record)
                    guard graph.isLinked(view) else { continue }
                    graph.add(view)
                    found.append(view.id)
                }
            }
            level = graph.unknownTargets(of: found)
        }
        return graph
    }

    /// The record at an edge's end names the edge's start as its parent or among its inputs.
    private static func confirms(_ view: RecordView, _ edge: Edge) -> Bool {
        switch edge.kind {
        case .child: view.parent == edge.from
        case .input: view.inputs.contains(edge.from)
        }
    }

    /// Some promise in the graph lists `view` and `view` confirms it.
    private func isLinked(_ view: RecordView) -> Bool {
        if let parent = view.parent, self.view(parent)?.children.contains(view.id) == true { return true }
        return view.inputs.contains { self.view($0)?.consumers.contains(view.id) == true }
    }

    /// The ids that `ids` list as children or consumers and that are not in the graph yet, each once.
    private func unknownTargets(of ids: [String]) -> [String] {
        var seen = Set<String>()
        var targets: [String] = []
        for id in ids {
            guard let view = view(id) else { continue }
            for target in view.children + view.consumers where positions[target] == nil && seen.insert(target).inserted {
                targets.append(target)
            }
        }
        return targets
    }

    private mutating func add(_ view: RecordView) {
        assert(positions[view.id] == nil, "\(view.id) is in the graph twice")
        positions[view.id] = nodes.count
        nodes.append(view)
    }
}
