/// Writes a ``PromiseGraph`` in Graphviz's DOT language: one node per
/// promise, coloured by state, the failing step outlined in red; `then`
/// links solid, combinator inputs dashed.
///
/// ```
/// digraph "pipe" {
///   node [shape=box, style="rounded,filled", fontname="monospace"];
///   "pipe" [label="pipe\nfulfilled [2.1s]", fillcolor="#d4f7d4"];
///   "pipe/a" [label="pipe/a\nexec: make a\nfulfilled [1.2s]", fillcolor="#d4f7d4"];
///   "pipe" -> "pipe/a";
///   "pipe/a" -> "pipe/join" [style=dashed];
/// }
/// ```
///
/// `promisectl tree pipe --dot | dot -Tsvg > pipe.svg`
struct DotRenderer {
    func lines(for graph: PromiseGraph, now: Int64) -> [String] {
        var lines = ["digraph " + Self.quoted(graph.rootID) + " {",
                     #"  node [shape=box, style="rounded,filled", fontname="monospace"];"#]
        for view in graph.nodes {
            var label = [view.id]
            let kind = TreeRenderer.kindText(view)
            if !kind.isEmpty { label.append(kind) }
            var state = view.state
            if let duration = view.duration(now: now) { state += " [" + Format.duration(milliseconds: duration) + "]" }
            if let exitStatus = view.exitStatus { state += " exit \(exitStatus)" }
            label.append(state)
            var attributes = "label=" + Self.quoted(label.joined(separator: "\n"))
                + ", fillcolor=" + Self.quoted(Self.colour(of: view.state))
            if graph.isFailingStep(view) { attributes += #", color="red", penwidth=3"# }
            lines.append("  " + Self.quoted(view.id) + " [" + attributes + "];")
        }
        for edge in graph.edges {
            let style = edge.kind == .input ? " [style=dashed]" : ""
            lines.append("  " + Self.quoted(edge.from) + " -> " + Self.quoted(edge.to) + style + ";")
        }
        if graph.isTruncated {
            lines.append("  // stopped at \(graph.nodes.count) promises (--max-nodes)")
        }
        lines.append("}")
        return lines
    }

    static func colour(of state: String) -> String {
        switch state {
        case "fulfilled": "#d4f7d4"
        case "rejected": "#f7d4d4"
        case "cancelled": "#e0e0e0"
        case "running": "#d4e4f7"
        case "queued": "#f0f0f0"
        default: "#ffffff"
        }
    }

    /// A DOT string: quotes and backslashes escaped, line breaks as `\n`.
    static func quoted(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            default: escaped.append(character)
            }
        }
        return "\"" + escaped + "\""
    }
}
