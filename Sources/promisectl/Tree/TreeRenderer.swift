import Foundation

/// Draws a ``PromiseGraph`` as an indented tree for a terminal, one line per
/// promise, with box-drawing characters or plain ASCII.
///
/// ```
/// pipe  fulfilled  [2.1s]
/// ├── pipe/a  exec: make a  fulfilled  [1.2s]  exit 0
/// │   └── pipe/join  all of 2  rejected: 1 of 2 input promises were rejected  [1.9s]
/// └── pipe/b  exec: make b  rejected: no rule to make b  [0.9s]  exit 2  ← failed here  → pipe/join (above)
/// ```
///
/// A combinator appears under each of its inputs: it is drawn in full under
/// the first, and the others end their own line with `→ ID (above)`, so that
/// a join of 36 compiles takes one line, not 36. (A promise drawn only after
/// its input's line was written, by a branch in between, gets a line of its
/// own there: `ID  ↑ shown above`.)
struct TreeRenderer {
    enum Style {
        case box, ascii

        var tee: String { self == .box ? "├── " : "|-- " }
        var corner: String { self == .box ? "└── " : "`-- " }
        var bar: String { self == .box ? "│   " : "|   " }
        var shownAbove: String { self == .box ? "↑ shown above" : "^ shown above" }
        var failedHere: String { self == .box ? "← failed here" : "<- failed here" }
        var drawnAbove: String { self == .box ? "→ " : "-> " }
    }

    var style: Style

    /// Every line of the drawing, the root first; a last line says when the
    /// graph was cut at `--max-nodes`.
    func lines(for graph: PromiseGraph, now: Int64) -> [String] {
        guard let root = graph.view(graph.rootID) else { return [] }
        var drawn: Set<String> = [root.id]
        let (rootLine, rootEdges) = entry(root, in: graph, drawn: drawn, now: now)
        var lines = [rootLine]
        // Depth first without recursion: a chain of thousands of steps is that deep.
        var stack: [(edges: [PromiseGraph.Edge], next: Int, indent: String)] = [(rootEdges, 0, "")]
        while var top = stack.popLast() {
            guard top.next < top.edges.count else { continue }
            let edge = top.edges[top.next]
            top.next += 1
            let isLast = top.next == top.edges.count
            stack.append(top)
            let branch = top.indent + (isLast ? style.corner : style.tee)
            guard let view = graph.view(edge.to) else { continue }
            if drawn.contains(view.id) {
                lines.append(branch + view.id + "  " + style.shownAbove)
                continue
            }
            drawn.insert(view.id)
            let (line, edges) = entry(view, in: graph, drawn: drawn, now: now)
            lines.append(branch + line)
            stack.append((edges, 0, top.indent + (isLast ? "    " : style.bar)))
        }
        if graph.isTruncated {
            lines.append("… stopped at \(graph.nodes.count) promises (--max-nodes); more are under \(graph.rootID)")
        }
        return lines
    }

    /// The line of `view` (its label, then `→ ID (above)` for what it feeds
    /// that is drawn already) and the edges still to draw under it.
    private func entry(
        _ view: RecordView, in graph: PromiseGraph, drawn: Set<String>, now: Int64
    ) -> (line: String, edges: [PromiseGraph.Edge]) {
        let edges = graph.downstream(of: view.id)
        let above = edges.filter { drawn.contains($0.to) && graph.view($0.to) != nil }.map(\.to)
        var line = label(view, in: graph, now: now)
        if !above.isEmpty {
            let named = above.prefix(3).joined(separator: ", ")
            line += "  " + style.drawnAbove + named + (above.count > 3 ? " and \(above.count - 3) more" : "") + " (above)"
        }
        return (line, above.isEmpty ? edges : edges.filter { !drawn.contains($0.to) })
    }

    /// `id  kind  state[: reason]  [duration]  exit N  progress  ← failed here`, the parts that apply.
    func label(_ view: RecordView, in graph: PromiseGraph, now: Int64) -> String {
        var parts = [view.id]
        let kind = Self.kindText(view)
        if !kind.isEmpty { parts.append(kind) }
        var state = view.state
        if let pid = view.pid, view.state == "running" { state += " pid \(pid)" }
        if view.state == "rejected", let reason = view.reasonMessage, !reason.isEmpty {
            state += ": " + Format.oneLine(reason, limit: 60)
        }
        parts.append(state)
        if let duration = view.duration(now: now) { parts.append("[" + Format.duration(milliseconds: duration) + "]") }
        if let exitStatus = view.exitStatus { parts.append("exit \(exitStatus)") }
        if !view.isSettled, !view.progressText.isEmpty { parts.append(view.progressText) }
        if graph.isFailingStep(view) { parts.append(style.failedHere) }
        return parts.joined(separator: "  ")
    }

    /// How the promise was made: nothing for `create`, `then` (with its
    /// condition when not `fulfilled`), `exec: ARGV`, or `all of N`.
    static func kindText(_ view: RecordView) -> String {
        switch view.kind {
        case "created":
            return ""
        case "then":
            let on = view.on.map { $0 == "fulfilled" ? "" : " on \($0)" } ?? ""
            if let exec = view.exec { return "exec" + on + ": " + Format.command(exec, limit: 60) }
            return "then" + on
        default:
            return "\(view.kind) of \(view.inputs.count)"
        }
    }
}
